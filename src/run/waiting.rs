//! What a run shows while it waits in line (`--wait`): where it stands,
//! read off the line itself (every candidate, `election::Line`) by a side
//! task that runs only while someone looks (a terminal, -v, systemd) and
//! decides nothing. It reads the line as the wait begins and again when
//! the queue's own watch moves on to a new key ahead (the queue tells it:
//! no watch of its own, which for every waiter on -v would wake them all
//! at each change of the line), and on the live line's and the reminder's
//! clocks:
//! - on a terminal (stderr a terminal, `TERM` not `dumb`): one live line,
//!   redrawn in place every second and cleared when the wait ends: the
//!   place in line, how many are ahead, who leads and for how long, how
//!   long this run has waited, and what `--wait-timeout` leaves;
//! - otherwise, with -v: a line as the run joins the line, one whenever
//!   the candidate just ahead changes, and a "still waiting" line every
//!   [`still_waiting_every`], each with the same facts (as fields, in JSON
//!   logs).
//!
//! What each shows is a pure function of what was read ([`Place::of`],
//! [`live_line`], [`log_line`]).

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::clock;
use crate::clock::Now;
use crate::election::holder::Proclaimed;
use crate::election::pause::Paused;
use crate::election::{Leader, Line};
use crate::etcd::ids::{Revision, Token};
use crate::etcd::Connection;
use crate::logging;
use crate::logging::printable;

use super::notify::{self, Stage};
use super::NotifySocket;

/// How a waiting run is shown, if at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// A live line on the terminal.
    Live,
    /// Lines in the log (-v).
    Logged,
}

impl Shown {
    /// How a run that waits is shown: live on a terminal that can redraw
    /// a line, logged with -v, else not at all (cron mails nothing).
    /// A terminal on -v gets the logged lines, not the live one: any log
    /// line would be written over it.
    pub fn choose(terminal: bool, term: Option<&std::ffi::OsStr>, verbose: bool) -> Option<Shown> {
        let dumb = term.is_some_and(|term| term == "dumb");
        match () {
            () if verbose => Some(Shown::Logged),
            () if terminal && !dumb => Some(Shown::Live),
            () => None,
        }
    }
}

/// The variable that sets how often a logged wait says it still waits.
pub const STILL_WAITING_VARIABLE: &str = "LEADERRUN_STILL_WAITING_EVERY";

/// The shortest interval [`STILL_WAITING_VARIABLE`] takes.
const STILL_WAITING_AT_LEAST: Duration = Duration::from_secs(1);

/// How often a logged wait says it still waits: every five minutes, or
/// as [`STILL_WAITING_VARIABLE`] says (a duration of a second or more, as
/// the options take them). None for `off`: a logged wait says nothing at
/// all, and reads nothing (a fleet on -v whose waiters should not each
/// read the line). Err: the one line that says what is wrong with it.
pub fn still_waiting_every(value: Option<&std::ffi::OsStr>) -> Result<Option<Duration>, String> {
    let Some(value) = value else {
        return Ok(Some(Duration::from_secs(300)));
    };
    let wrong = || {
        format!(
            "{STILL_WAITING_VARIABLE}={}: expected a duration of 1s or more (e.g. 30s, 5m), or off",
            printable(&value.to_string_lossy())
        )
    };
    match value.to_str() {
        Some("off") => Ok(None),
        Some(text) => match humantime::parse_duration(text) {
            Ok(every) if every >= STILL_WAITING_AT_LEAST => Ok(Some(every)),
            _ => Err(wrong()),
        },
        None => Err(wrong()),
    }
}

/// Where a waiting run stands, as read off the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Its place in line, the leader's being 1.
    pub place: usize,
    /// The key just ahead of ours.
    pub just_ahead: Option<String>,
    /// Who leads ("pid 42 on web-1 (token 7)", or another tool's
    /// candidate as `status` describes it), and its command.
    pub leader: Option<(String, String)>,
    /// The leader's key.
    pub leader_key: Option<String>,
    /// Since when the leader leads, as its key says.
    pub leads_since: Option<SystemTime>,
}

impl Place {
    /// Where the candidate with create revision `ours` stands in `line`;
    /// None once its key is not there (gone, or not seen yet), or once it
    /// is among those that run (its turn: nothing is left to show).
    pub fn of<'a>(line: impl IntoIterator<Item = &'a Leader>, ours: Token) -> Option<Place> {
        let mut leader: Option<&Leader> = None;
        let mut just_ahead = None;
        for (at, candidate) in line.into_iter().enumerate() {
            if at == 0 {
                leader = Some(candidate);
            }
            if candidate.token == ours {
                if at < leader.map_or(1, Leader::slots) {
                    return None;
                }
                let leads_since = leader
                    .and_then(|leader| leader.holder.started())
                    .and_then(|started| humantime::parse_rfc3339(started).ok());
                return Some(Place {
                    place: at + 1,
                    just_ahead,
                    leader: leader.map(|leader| {
                        let who = match &leader.holder {
                            Proclaimed::Leaderrun(holder) => format!(
                                "pid {} on {} (token {})",
                                holder.pid,
                                printable(&holder.host),
                                leader.token
                            ),
                            Proclaimed::Other(_) => leader.describe(),
                        };
                        (who, printable(leader.holder.command()).into_owned())
                    }),
                    leader_key: leader.map(|leader| leader.key.clone()),
                    leads_since,
                });
            }
            just_ahead = Some(candidate.key.clone());
        }
        None
    }

    /// Who leads, and for how long as of `now`: "pid 42 on web-1 (token
    /// 7) leads: sleep 30, for 1m 5s".
    fn leader(&self, now: SystemTime) -> Option<String> {
        let (leader, command) = self.leader.as_ref()?;
        let leads_for = self
            .leads_since
            .map(|since| {
                let leads_for = now.duration_since(since).unwrap_or_default();
                format!(", for {}", whole_seconds(leads_for))
            })
            .unwrap_or_default();
        Some(format!("{leader} leads: {command}{leads_for}"))
    }
}

/// `duration`, to the second, as people read it.
fn whole_seconds(duration: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(Duration::from_secs(duration.as_secs()))
}

/// When a line is said: the wall clock, how long the run has waited, and
/// what its --wait-timeout leaves (None without one).
#[derive(Debug, Clone, Copy)]
pub struct Moment {
    pub now: SystemTime,
    pub waited: Duration,
    pub left: Option<Duration>,
}

/// The live line: where the run stands and how long it has waited, with
/// what its --wait-timeout leaves first, then who leads (a narrow
/// terminal cuts the end off).
pub fn live_line(place: &Place, election: &str, moment: Moment) -> String {
    let mut line = format!(
        "waiting for {}: place {} in line, {} ahead; waited {}",
        printable(election),
        place.place,
        place.place - 1,
        whole_seconds(moment.waited)
    );
    if let Some(left) = moment.left {
        // Rounded up: "0s left" would be said a whole second early.
        let left = Duration::from_secs(left.as_secs() + u64::from(left.subsec_nanos() > 0));
        line.push_str(&format!(" (--wait-timeout: {} left)", whole_seconds(left)));
    }
    if let Some(leader) = place.leader(moment.now) {
        line.push_str(&format!("; {leader}"));
    }
    line
}

/// Why a logged line is said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The run joined the line.
    Joined,
    /// The candidate just ahead changed.
    AheadChanged,
    /// The steady reminder.
    StillWaiting,
}

/// A logged line: the same facts as the live line, said as `why` asks.
pub fn log_line(why: Why, place: &Place, election: &str, moment: Moment) -> String {
    let facts = live_line(place, election, moment);
    match why {
        Why::Joined => facts,
        Why::AheadChanged => format!("{facts} (the one ahead changed)"),
        Why::StillWaiting => format!("still {facts}"),
    }
}

/// The live line on stderr: drawn, redrawn in place and cleared with the
/// `console` crate (the terminal's width, erasing a line as terminals
/// expect). Not indicatif, whose float arithmetic linked libm into every
/// run: 0.4 MiB more resident in each idle waiter, shown or not.
#[derive(Clone)]
struct LiveLine {
    term: console::Term,
}

impl LiveLine {
    /// Shows `text` in place of the line, cut to the terminal's width (a
    /// line that wrapped could not be erased).
    fn draw(&self, text: &str) {
        let (_, columns) = self.term.size();
        let shown = fit(text, usize::from(columns.saturating_sub(1)));
        let drawn = self
            .term
            .clear_line()
            .and_then(|()| self.term.write_str(&shown))
            .and_then(|()| self.term.flush());
        if let Err(err) = drawn {
            tracing::debug!("drawing the wait's line: {err}");
        }
    }

    fn clear(&self) {
        let _ = self.term.clear_line().and_then(|()| self.term.flush());
    }
}

/// The start of `text` that fits in `columns` terminal columns, a wide
/// character (two columns) left out whole rather than cut in half.
/// (`console::truncate_str` gave nothing at all at some widths for text
/// with wide characters.)
fn fit(text: &str, columns: usize) -> String {
    let mut used = 0;
    let mut fitted = String::new();
    let mut one = [0; 4];
    for character in text.chars() {
        let width = console::measure_text_width(character.encode_utf8(&mut one));
        if used + width > columns {
            break;
        }
        used += width;
        fitted.push(character);
    }
    fitted
}

/// A wait shown: its task, and the live line, cleared as it is dropped.
pub struct Waiting {
    task: tokio::task::JoinHandle<()>,
    live: Option<LiveLine>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(live) = &self.live {
            live.clear();
        }
    }
}

/// What a shown wait needs to know.
pub struct Watched {
    /// How it is shown on stderr, if it is.
    pub shown: Option<Shown>,
    /// Where systemd listens, if it does: told each new place in line.
    pub systemd: Option<NotifySocket>,
    /// What the queue watches ahead of this run, as it changes.
    pub watching: tokio::sync::watch::Receiver<Option<Vec<u8>>>,
    pub election: String,
    /// Our key's create revision.
    pub ours: Token,
    /// When this run began to wait (for "waited").
    pub since: clock::Instant,
    /// Its --wait-timeout's end, if it has one.
    pub gives_up_at: Option<clock::Instant>,
    pub still_waiting_every: Duration,
}

impl Watched {
    /// Now, for what is said.
    fn moment(&self) -> Moment {
        Moment {
            now: clock::wall(),
            waited: self.since.elapsed(),
            left: self.gives_up_at.map(|at| at.remaining()),
        }
    }
}

/// Starts showing a wait: reads the line, then follows it.
pub fn show(connection: &Connection, watched: Watched) -> Waiting {
    let live = (watched.shown == Some(Shown::Live)).then(|| LiveLine {
        term: console::Term::stderr(),
    });
    let task = crate::host::spawn(follow(connection.clone(), watched, live.clone()));
    Waiting { task, live }
}

/// The side task: the line read as the wait begins, again whenever the
/// queue watches something new ahead (the one just ahead changed: the
/// queue's own watch saw it, so no watch of ours is opened, and a change
/// far ahead wakes nobody behind), and as the live line and the reminder
/// go; what it says, shown.
async fn follow(connection: Connection, watched: Watched, live: Option<LiveLine>) {
    let mut watching = watched.watching.clone();
    let latest: Mutex<Option<Place>> = Mutex::default();
    let mut reporter = Reporter {
        watched: &watched,
        live: live.as_ref(),
        latest: &latest,
        took_over: None,
    };
    while !reporter.refresh(&connection).await {
        clock::sleep(Duration::from_secs(1)).await;
    }
    // How often the live line is redrawn (its times move on), and every
    // how many redraws the line is read again (a change far ahead wakes
    // nothing here); or, logged, the reminder.
    let (every, read_every) = match (&live, watched.shown) {
        (Some(_), _) => (Some(Duration::from_secs(1)), 2),
        (None, Some(Shown::Logged)) => (Some(watched.still_waiting_every), 1),
        (None, _) => (None, 1),
    };
    let tick = || async move {
        match every {
            Some(every) => clock::sleep(every).await,
            None => std::future::pending().await,
        }
    };
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            changed = watching.changed() => {
                if changed.is_err() {
                    // The campaign is gone: so is this wait, soon.
                    return std::future::pending().await;
                }
                reporter.refresh(&connection).await;
            }
            () = tick() => {
                ticks += 1;
                if ticks % read_every == 0 {
                    reporter.refresh(&connection).await;
                }
                let place = latest.lock().expect("not poisoned").clone();
                let Some(place) = place else { continue };
                match &live {
                    Some(live) => live.draw(&now_line(&watched, &place)),
                    None => log(&watched, Why::StillWaiting, &place),
                }
            }
        }
    }
}

/// The line, read within a second, if it could be (the wait is only
/// shown: a failure here is for -vv, and a silent etcd must not stop the
/// live line's clock).
async fn read_line(connection: &Connection, election: &str) -> Option<Line> {
    match clock::timeout(Duration::from_secs(1), Line::read(connection, election)).await {
        Some(Ok(line)) => Some(line),
        Some(Err(err)) => {
            tracing::debug!("reading the line to show the wait: {err:#}");
            None
        }
        None => {
            tracing::debug!("reading the line to show the wait: no answer within a second");
            None
        }
    }
}

/// What is shown as the line changes.
struct Reporter<'a> {
    watched: &'a Watched,
    live: Option<&'a LiveLine>,
    latest: &'a Mutex<Option<Place>>,
    /// A leader seen taking over leads from then, whatever its key says
    /// (until its win is marked, since when it waited): its key, and then.
    took_over: Option<(String, SystemTime)>,
}

impl Reporter<'_> {
    /// Reads the line and shows what it says: false if it could not be
    /// read.
    async fn refresh(&mut self, connection: &Connection) -> bool {
        match read_line(connection, &self.watched.election).await {
            Some(line) => {
                self.report(&line);
                true
            }
            None => false,
        }
    }

    fn report(&mut self, line: &Line) {
        let mut place = Place::of(line.in_line(), self.watched.ours);
        let mut last = self.latest.lock().expect("not poisoned");
        if let (Some(place), Some(before)) = (&mut place, &*last) {
            if place.leader_key != before.leader_key {
                self.took_over = place.leader_key.clone().map(|key| (key, clock::wall()));
            }
            let seen = self
                .took_over
                .as_ref()
                .filter(|(key, _)| place.leader_key.as_ref() == Some(key))
                .map(|(_, at)| *at);
            place.leads_since = place.leads_since.max(seen);
        }
        if let Some(place) = &place {
            let why = match &*last {
                None => Some(Why::Joined),
                Some(before) if before.just_ahead != place.just_ahead => Some(Why::AheadChanged),
                Some(_) => None,
            };
            match (self.live, why, self.watched.shown) {
                (Some(live), _, _) => live.draw(&now_line(self.watched, place)),
                (None, Some(why), Some(Shown::Logged)) => log(self.watched, why, place),
                _ => {}
            }
            let moved = last.as_ref().is_none_or(|before| {
                (before.place, &before.leader_key) != (place.place, &place.leader_key)
            });
            if let (Some(socket), true) = (&self.watched.systemd, moved) {
                let stage = Stage::Queued {
                    place: Some(place.place),
                    leads: place.leader.as_ref().map(|(leader, _)| leader.clone()),
                };
                notify::tell(socket, &notify::told(&stage, &self.watched.election));
            }
        }
        *last = place;
    }
}

fn now_line(watched: &Watched, place: &Place) -> String {
    live_line(place, &watched.election, watched.moment())
}

fn log(watched: &Watched, why: Why, place: &Place) {
    let moment = watched.moment();
    let line = log_line(why, place, &watched.election, moment);
    let said = match why {
        Why::Joined => "joined",
        Why::AheadChanged => "ahead_changed",
        Why::StillWaiting => "still_waiting",
    };
    tracing::info!(
        event = crate::logging::events::WAITING,
        why = said,
        place = place.place,
        ahead = place.place - 1,
        leader = place.leader.as_ref().map(|(leader, _)| leader.as_str()),
        leader_command = place.leader.as_ref().map(|(_, command)| command.as_str()),
        waited_s = moment.waited.as_secs(),
        wait_timeout_left_s = moment.left.map(|left| left.as_secs()),
        "{line}"
    );
}

/// A wait for the election's pause to end, shown as a wait in line is:
/// one live line on a terminal (cleared as the wait ends), or a logged
/// line (-v) each time a pause is found; nothing otherwise.
pub struct PauseShown<'a> {
    shown: Option<Shown>,
    election: &'a str,
    live: Option<LiveLine>,
    /// The pause last said, so that a pause read again unchanged is not
    /// said twice.
    said: Option<Revision>,
}

impl<'a> PauseShown<'a> {
    pub fn new(shown: Option<Shown>, election: &'a str) -> PauseShown<'a> {
        PauseShown {
            shown,
            election,
            live: None,
            said: None,
        }
    }

    /// A pause found standing.
    pub fn seen(&mut self, paused: &Paused) {
        if self.said == Some(paused.written_at) {
            return;
        }
        self.said = Some(paused.written_at);
        let line = pause_line(self.election, paused);
        match self.shown {
            Some(Shown::Live) => {
                let live = self.live.get_or_insert_with(|| LiveLine {
                    term: console::Term::stderr(),
                });
                live.draw(&format!("leaderrun: {line}"));
            }
            Some(Shown::Logged) => {
                let (by, since, until, reason) = match &paused.value {
                    Ok(pause) => (
                        format!("{} on {}", pause.user, pause.host),
                        pause.since.as_str(),
                        pause.until.as_deref().unwrap_or("resume"),
                        pause.reason.as_deref().unwrap_or_default(),
                    ),
                    Err(_) => ("a key leaderrun did not write".into(), "", "resume", ""),
                };
                tracing::info!(
                    event = logging::events::PAUSED,
                    by = %by,
                    since = %since,
                    until = %until,
                    reason = %reason,
                    "{line}"
                );
            }
            None => {}
        }
    }
}

impl Drop for PauseShown<'_> {
    fn drop(&mut self) {
        if let Some(live) = &self.live {
            live.clear();
        }
    }
}

/// "jobs/nightly is paused by alice on ops-1 since …: freeze; waiting
/// for the pause to end".
pub fn pause_line(election: &str, paused: &Paused) -> String {
    format!(
        "{}; waiting for the pause to end",
        paused.line_for(election)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::holder::Holder;
    use std::ffi::OsStr;

    #[test]
    fn a_wait_is_live_on_a_terminal_logged_with_v_and_else_quiet() {
        let xterm = Some(OsStr::new("xterm"));
        let dumb = Some(OsStr::new("dumb"));
        assert_eq!(Shown::choose(true, xterm, false), Some(Shown::Live));
        assert_eq!(Shown::choose(true, None, false), Some(Shown::Live));
        assert_eq!(Shown::choose(true, xterm, true), Some(Shown::Logged));
        assert_eq!(Shown::choose(true, dumb, false), None);
        assert_eq!(Shown::choose(true, dumb, true), Some(Shown::Logged));
        assert_eq!(Shown::choose(false, xterm, true), Some(Shown::Logged));
        assert_eq!(Shown::choose(false, xterm, false), None);
    }

    #[test]
    fn still_waiting_every_five_minutes_unless_told_otherwise() {
        let every = |value: &str| still_waiting_every(Some(OsStr::new(value)));
        assert_eq!(
            still_waiting_every(None),
            Ok(Some(Duration::from_secs(300)))
        );
        assert_eq!(every("2s"), Ok(Some(Duration::from_secs(2))));
        assert_eq!(every("1m 30s"), Ok(Some(Duration::from_secs(90))));
        assert_eq!(every("off"), Ok(None));
        for wrong in ["", "0s", "1ms", "soon", "-1s", "OFF"] {
            let said = every(wrong).expect_err(wrong);
            assert!(said.contains("expected a duration of 1s or more"), "{said}");
        }
        let said = every("5\u{1b}[2J").unwrap_err();
        assert!(!said.chars().any(char::is_control), "{said:?}");
    }

    fn candidate(token: i64, pid: u32, started: &str, slots: usize) -> Leader {
        Leader {
            key: format!("jobs/x/{token:x}"),
            token: Token(token),
            lease: crate::etcd::ids::LeaseId(token),
            holder: Proclaimed::Leaderrun(Holder {
                host: "web-1".into(),
                pid,
                started: started.into(),
                command: format!("job {token}"),
                max_running: slots,
            }),
        }
    }

    /// A line of three, each started with `slots` runners.
    fn three(slots: usize) -> [Leader; 3] {
        [
            candidate(5, 50, "2026-12-07T10:00:00Z", slots),
            candidate(7, 70, "2026-12-07T10:01:00Z", slots),
            candidate(9, 90, "2026-12-07T10:02:00Z", slots),
        ]
    }

    #[test]
    fn a_place_is_counted_from_the_leader_and_names_the_one_just_ahead() {
        let line = three(1);
        let third = Place::of(&line, Token(9)).expect("in line");
        assert_eq!(third.place, 3);
        assert_eq!(third.just_ahead.as_deref(), Some("jobs/x/7"));
        assert_eq!(third.leader_key.as_deref(), Some("jobs/x/5"));
        assert_eq!(
            third.leader,
            Some(("pid 50 on web-1 (token 5)".into(), "job 5".into()))
        );
        let since = humantime::parse_rfc3339("2026-12-07T10:00:00Z").unwrap();
        assert_eq!(third.leads_since, Some(since));
        assert_eq!(Place::of(&line, Token(7)).expect("in line").place, 2);
        // Our turn (the leader's place), or a key not (yet) there.
        assert_eq!(Place::of(&line, Token(5)), None);
        assert_eq!(Place::of(&line, Token(11)), None);
    }

    #[test]
    fn with_several_runners_a_place_among_them_is_a_turn() {
        let line = three(2);
        assert_eq!(Place::of(&line, Token(7)), None);
        assert_eq!(Place::of(&line, Token(9)).expect("waits").place, 3);
    }

    #[test]
    fn the_lines_say_where_the_run_stands() {
        let line = [
            candidate(5, 50, "2026-12-07T10:00:00Z", 1),
            candidate(7, 70, "2026-12-07T10:01:00Z", 1),
        ];
        let place = Place::of(&line, Token(7)).expect("in line");
        let moment = Moment {
            now: humantime::parse_rfc3339("2026-12-07T10:01:05Z").unwrap(),
            waited: Duration::from_millis(4_900),
            left: Some(Duration::from_secs(115)),
        };
        assert_eq!(
            live_line(&place, "jobs/x", moment),
            "waiting for jobs/x: place 2 in line, 1 ahead; waited 4s (--wait-timeout: 1m 55s left); pid 50 on web-1 (token 5) leads: job 5, for 1m 5s"
        );
        let moment = Moment {
            left: None,
            ..moment
        };
        assert_eq!(
            live_line(&place, "jobs/x", moment),
            "waiting for jobs/x: place 2 in line, 1 ahead; waited 4s; pid 50 on web-1 (token 5) leads: job 5, for 1m 5s"
        );
        let said = |why| log_line(why, &place, "jobs/x", moment);
        assert!(said(Why::Joined).starts_with("waiting for jobs/x: place 2"));
        assert!(said(Why::AheadChanged).ends_with(" (the one ahead changed)"));
        assert!(said(Why::StillWaiting).starts_with("still waiting for jobs/x: place 2"));
    }

    /// Wide characters (two columns each) fit whole or not at all, and the
    /// line is never left empty for a width that cuts one in half.
    #[test]
    fn a_line_is_cut_to_the_columns_a_wide_character_at_a_time() {
        let text = "ab漢字cd".repeat(40);
        for columns in 0..200 {
            let fitted = fit(&text, columns);
            let width = console::measure_text_width(&fitted);
            assert!(width <= columns, "{columns}: {width}");
            assert!(
                width + 1 >= columns.min(console::measure_text_width(&text)),
                "{columns}: {width}"
            );
        }
        assert_eq!(fit("ab漢字", 3), "ab");
        assert_eq!(fit("ab漢字", 4), "ab漢");
    }

    /// A name or a holder with control characters shows them escaped: the
    /// live line is redrawn in place, and an escape sequence in it would
    /// take the terminal over.
    #[test]
    fn the_lines_show_control_characters_escaped() {
        let mut leader = candidate(5, 50, "2026-12-07T10:00:00Z", 1);
        if let Proclaimed::Leaderrun(holder) = &mut leader.holder {
            holder.host = "web\x1b[2J".into();
            holder.command = "rm\n-rf".into();
        }
        let line = [leader, candidate(7, 70, "2026-12-07T10:01:00Z", 1)];
        let place = Place::of(&line, Token(7)).expect("in line");
        let moment = Moment {
            now: humantime::parse_rfc3339("2026-12-07T10:01:05Z").unwrap(),
            waited: Duration::ZERO,
            left: None,
        };
        let shown = live_line(&place, "jobs/\x1b[31m", moment);
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
    }
}
