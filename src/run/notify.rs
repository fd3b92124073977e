//! What the service manager is told of a run, when leaderrun is a systemd
//! `Type=notify` service (`NOTIFY_SOCKET` set; sd_notify(3)): `READY=1`
//! once the run is in line or leads, so that `systemctl start` returns for
//! a queued replica too instead of timing out; a `STATUS=` line at each
//! stage, which `systemctl status` shows; `STOPPING=1` as the command is
//! stopped. What a stage says is a pure function ([`told`]); a [`Notifier`]
//! sends it when the stage changes. The command does not inherit the
//! socket unless `--pass-notify-socket` says so (`Config::withheld`).

use crate::etcd::ids::Token;
use crate::logging::printable;

/// Where a run stands, as the service manager is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Before a place in line: dialling etcd, granting, joining.
    Campaigning,
    /// In line behind the run that leads (as `status` describes it), if
    /// it was seen.
    Queued { behind: Option<String> },
    /// The command runs, led with this fencing token.
    Leading { token: Token },
    /// The command is being stopped.
    Stopping,
}

/// What one stage tells the service manager.
#[derive(Debug, PartialEq, Eq)]
pub struct Told {
    pub ready: bool,
    pub stopping: bool,
    /// One line, with no control characters: a newline in it would start
    /// another assignment of the protocol's.
    pub status: String,
}

/// What `stage` of a run of `election` tells the service manager.
pub fn told(stage: &Stage, election: &str) -> Told {
    let (ready, stopping, status) = match stage {
        Stage::Campaigning => (false, false, format!("campaigning for {election}")),
        Stage::Queued {
            behind: Some(behind),
        } => (
            true,
            false,
            format!("queued for {election}: {behind} leads"),
        ),
        Stage::Queued { behind: None } => (true, false, format!("queued for {election}")),
        Stage::Leading { token } => (
            true,
            false,
            format!("leading {election} with fencing token {token}; the command runs"),
        ),
        Stage::Stopping => (false, true, format!("stopping the command of {election}")),
    };
    Told {
        ready,
        stopping,
        status: printable(&status).into_owned(),
    }
}

/// Tells the service manager each new stage of a run, if it listens.
pub struct Notifier {
    /// Whether `NOTIFY_SOCKET` was set when leaderrun started.
    listening: bool,
    last: Option<Stage>,
}

impl Notifier {
    pub fn new(listening: bool) -> Notifier {
        Notifier {
            listening,
            last: None,
        }
    }

    /// The run of `election` is at the stage `stage` gives (asked only if
    /// a service manager listens; None, a step that says nothing new):
    /// told, unless it was already. A notification that cannot be sent is
    /// logged and the run goes on: systemd's own timeout then says the
    /// service never became ready.
    pub fn stage(&mut self, stage: impl FnOnce() -> Option<Stage>, election: &str) {
        if !self.listening {
            return;
        }
        let Some(stage) = stage() else {
            return;
        };
        if self.last.as_ref() == Some(&stage) {
            return;
        }
        let told = told(&stage, election);
        let mut states = Vec::with_capacity(3);
        if told.ready {
            states.push(sd_notify::NotifyState::Ready);
        }
        if told.stopping {
            states.push(sd_notify::NotifyState::Stopping);
        }
        states.push(sd_notify::NotifyState::Status(&told.status));
        match sd_notify::notify(&states) {
            Ok(()) => tracing::debug!(status = %told.status, "told systemd"),
            Err(err) => tracing::info!("telling systemd where the run stands: {err}"),
        }
        self.last = Some(stage);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_line_or_leading_is_ready_and_stopping_says_so() {
        let stages = [
            (Stage::Campaigning, false, false),
            (Stage::Queued { behind: None }, true, false),
            (Stage::Leading { token: Token(7) }, true, false),
            (Stage::Stopping, false, true),
        ];
        for (stage, ready, stopping) in stages {
            let told = told(&stage, "jobs/x");
            assert_eq!((told.ready, told.stopping), (ready, stopping), "{stage:?}");
        }
    }

    #[test]
    fn each_stage_says_where_the_run_stands() {
        let behind = Some("pid 42 on web-1 since 2026-12-07T00:00:00Z".to_string());
        let said = [
            (Stage::Campaigning, "campaigning for jobs/x"),
            (
                Stage::Queued { behind },
                "queued for jobs/x: pid 42 on web-1 since 2026-12-07T00:00:00Z leads",
            ),
            (Stage::Queued { behind: None }, "queued for jobs/x"),
            (
                Stage::Leading { token: Token(7) },
                "leading jobs/x with fencing token 7; the command runs",
            ),
            (Stage::Stopping, "stopping the command of jobs/x"),
        ];
        for (stage, status) in said {
            assert_eq!(told(&stage, "jobs/x").status, status);
        }
    }

    /// A name or a holder with a newline cannot add an assignment (a
    /// `READY=1` of its own) to the datagram.
    #[test]
    fn a_status_is_one_line_whatever_the_names_hold() {
        let behind = Some("pid 1 on evil\nREADY=1".to_string());
        let told = told(&Stage::Queued { behind }, "jobs/\nREADY=1");
        assert!(!told.status.contains('\n'), "{}", told.status);
        assert!(
            told.status.chars().all(|c| !c.is_control()),
            "{}",
            told.status
        );
    }
}
