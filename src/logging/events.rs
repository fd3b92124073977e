//! The names of the log events that are read by their fields rather than
//! their wording: each is the `event` field of one tracing line, so that
//! `--log-format json` shows `"fields": {"event": "...", ...}`. The tests
//! read these (`leaderrun::events`), and a log shipper may; the message
//! beside it stays free to change.

/// A waiter has had its look at the queue and watches the key ahead of it
/// (field `watched`: that key). Debug level.
pub const QUEUED: &str = "queued";

/// A resigning leader rewrote the key of the one behind it, handing it the
/// turn (field `to`: that key). Debug level.
pub const HANDED_OVER: &str = "handed_over";

/// A waiter's turn came from the leader ahead of it handing over, not from
/// a read of the line (field `revision`). Debug level.
pub const HANDED_OVER_TO_US: &str = "handed_over_to_us";

/// A leader of one runner on the fast path knows who is behind it, as
/// its command runs: the look-up has answered (field `successor`: that
/// candidate's key, or empty for nobody; field `read`: whether it was read
/// from etcd, or taken from what the leader before passed on). Debug level.
pub const LOOKED_BEHIND: &str = "looked_behind";

/// etcd acknowledged a renewal of the lease (fields `granted`: the TTL it
/// granted, in seconds; `sent_ago_ms`: how long before this line the
/// renewal was sent). The lease's local deadline is then `granted`
/// seconds after that send. Debug level.
pub const RENEWED: &str = "lease_renewed";

/// A candidate won and leads (fields `token`, `key`). Info level.
pub const LEADER: &str = "leader";

/// A run lost its place or its leadership before its command ran, and
/// campaigns again. Info level.
pub const CAMPAIGNING_AGAIN: &str = "campaigning_again";

/// A queued run says where it stands (-v): as it joins the line, when the
/// one just ahead changes, and every LEADERRUN_STILL_WAITING_EVERY (fields
/// `why`: `joined`, `ahead_changed` or `still_waiting`; `place`, `ahead`,
/// `leader`, `leader_command`, `waited_s`, `wait_timeout_left_s`). Info
/// level.
pub const WAITING: &str = "waiting";

/// A run with --wait found its election paused (`leaderrun pause`), and
/// waits for the pause to end (fields `by`: `USER on HOST`; `since`;
/// `until`: when it ends by itself, or `resume`; `reason`, empty if none
/// was given). Said again when the pause is replaced. Info level.
pub const PAUSED: &str = "paused";
