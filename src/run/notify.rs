//! What the service manager is told of a run, when leaderrun is a systemd
//! `Type=notify` service (`NOTIFY_SOCKET` set; sd_notify(3)): `READY=1`
//! once the run is in line or leads, so that `systemctl start` returns for
//! a queued replica too instead of timing out; a `STATUS=` line at each
//! stage, which `systemctl status` shows (a queued run's place as it
//! moves, from `waiting`); `STOPPING=1` as the run ends. What a stage says
//! is a pure function ([`told`]); a [`Notifier`] sends it when the stage
//! changes. The command does not inherit the
//! socket unless `--pass-notify-socket` says so (`Config::withheld`).
//!
//! The datagram is sent here, not by a crate: the one at hand (sd-notify)
//! sends on a blocking socket, and a service manager that stops reading
//! (its queue holds about ten datagrams) then froze the whole run, the
//! renewals and the kill sequence with it, while the lease expired under a
//! running command. Here a notification that cannot go at once is dropped.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

use crate::etcd::ids::Token;
use crate::logging::printable;

/// Where the service manager listens (`NOTIFY_SOCKET`), as sd_notify(3)
/// reads it: a path, or a name in the abstract namespace (`@name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Socket {
    Path(PathBuf),
    Abstract(Vec<u8>),
}

impl Socket {
    /// The socket `NOTIFY_SOCKET`'s value names; None for no value, an
    /// empty one, or one that is neither an absolute path nor `@name`
    /// (sd_notify(3) refuses those too: a relative path would be looked
    /// up wherever leaderrun happens to run).
    pub fn from_env(value: Option<&OsStr>) -> Option<Socket> {
        let bytes = value?.as_bytes();
        match bytes.first()? {
            b'/' => Some(Socket::Path(PathBuf::from(value?))),
            b'@' if bytes.len() > 1 => Some(Socket::Abstract(bytes[1..].to_vec())),
            _ => None,
        }
    }

    /// Sends `datagram` without waiting: a socket whose queue is full
    /// refuses it (`WouldBlock`) rather than hold the run up.
    pub fn send(&self, datagram: &[u8]) -> io::Result<()> {
        let socket = UnixDatagram::unbound()?;
        socket.set_nonblocking(true)?;
        let sent = match self {
            Socket::Path(path) => socket.send_to(datagram, path)?,
            Socket::Abstract(name) => {
                use std::os::linux::net::SocketAddrExt;
                let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
                socket.send_to_addr(datagram, &address)?
            }
        };
        match sent == datagram.len() {
            true => Ok(()),
            false => Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "a datagram cut short",
            )),
        }
    }
}

/// Where a run stands, as the service manager is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Before a place in line: dialling etcd, granting, joining.
    Campaigning,
    /// In line: its place, once the wait shown has read the line
    /// (`waiting`, which tells each change of it), and who leads, as
    /// `status` describes it, if that was seen.
    Queued {
        place: Option<usize>,
        leads: Option<String>,
    },
    /// Waiting (--wait) for the election's pause to end: who paused it,
    /// as `status` describes it.
    Paused { by: String },
    /// The command runs, led with this fencing token.
    Leading { token: Token },
    /// The run ends: what is left of the command's job is stopped (the
    /// command itself, or what it left running), then it resigns.
    Ending,
}

/// The most characters of a `STATUS=` line.
const STATUS_SHOWN: usize = 1000;

/// What one stage tells the service manager.
#[derive(Debug, PartialEq, Eq)]
pub struct Told {
    pub ready: bool,
    pub stopping: bool,
    /// One line, with no control characters: a newline in it would start
    /// another assignment of the protocol's.
    pub status: String,
}

impl Told {
    /// The datagram: one assignment a line, as sd_notify(3) sends them.
    pub fn datagram(&self) -> String {
        let mut datagram = String::new();
        if self.ready {
            datagram.push_str("READY=1\n");
        }
        if self.stopping {
            datagram.push_str("STOPPING=1\n");
        }
        datagram.push_str(&format!("STATUS={}\n", self.status));
        datagram
    }
}

/// What `stage` of a run of `election` tells the service manager.
pub fn told(stage: &Stage, election: &str) -> Told {
    let (ready, stopping, status) = match stage {
        Stage::Campaigning => (false, false, format!("campaigning for {election}")),
        Stage::Queued { place, leads } => {
            let mut status = format!("queued for {election}");
            if let Some(place) = place {
                status.push_str(&format!(": place {place} in line"));
            }
            if let Some(leads) = leads {
                status.push_str(&format!("; {leads} leads"));
            }
            (true, false, status)
        }
        Stage::Paused { by } => (
            true,
            false,
            format!("{election} is paused {by}; waiting for the pause to end"),
        ),
        Stage::Leading { token } => (
            true,
            false,
            format!("leading {election} with fencing token {token}; the command runs"),
        ),
        Stage::Ending => (
            false,
            true,
            format!("ending the run of {election}: its command's job stopped, then resigning"),
        ),
    };
    // One line of a bounded size, whatever a key written by hand holds:
    // a datagram too large for the socket would be dropped, READY=1 with
    // it.
    let status = printable(&status).into_owned();
    let status = match status.char_indices().nth(STATUS_SHOWN) {
        Some((at, _)) => format!("{}...", &status[..at]),
        None => status,
    };
    Told {
        ready,
        stopping,
        status,
    }
}

/// Tells the service manager each new stage of a run, if it listens.
pub struct Notifier {
    /// Where it listens, if it does.
    socket: Option<Socket>,
    last: Option<Stage>,
}

impl Notifier {
    pub fn new(socket: Option<Socket>) -> Notifier {
        Notifier { socket, last: None }
    }

    /// The run of `election` is at the stage `stage` gives (asked only if
    /// a service manager listens; None, a step that says nothing new):
    /// told, unless it was already.
    pub fn stage(&mut self, stage: impl FnOnce() -> Option<Stage>, election: &str) {
        let Some(socket) = &self.socket else {
            return;
        };
        let Some(stage) = stage() else {
            return;
        };
        if self.last.as_ref() == Some(&stage) {
            return;
        }
        tell(socket, &told(&stage, election));
        self.last = Some(stage);
    }
}

/// Sends `told` to `socket`. One that cannot be sent is logged and the run
/// goes on: systemd's own timeout then says the service never became
/// ready.
pub fn tell(socket: &Socket, told: &Told) {
    match socket.send(told.datagram().as_bytes()) {
        Ok(()) => tracing::debug!(status = %told.status, "told systemd"),
        Err(err) => tracing::info!("telling systemd where the run stands: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_line_or_leading_is_ready_and_ending_says_so() {
        let stages = [
            (Stage::Campaigning, "STATUS=campaigning for jobs/x\n"),
            (
                Stage::Queued {
                    place: None,
                    leads: None,
                },
                "READY=1\nSTATUS=queued for jobs/x\n",
            ),
            (
                Stage::Paused {
                    by: "by alice on ops-1 since s until resumed: freeze".into(),
                },
                "READY=1\nSTATUS=jobs/x is paused by alice on ops-1 since s until resumed: freeze; waiting for the pause to end\n",
            ),
            (
                Stage::Leading { token: Token(7) },
                "READY=1\nSTATUS=leading jobs/x with fencing token 7; the command runs\n",
            ),
            (
                Stage::Ending,
                "STOPPING=1\nSTATUS=ending the run of jobs/x: its command's job stopped, then resigning\n",
            ),
        ];
        for (stage, datagram) in stages {
            assert_eq!(told(&stage, "jobs/x").datagram(), datagram, "{stage:?}");
        }
    }

    /// However long what it says (a pause key written by hand), a status
    /// line stays small enough for one datagram, READY=1 with it.
    #[test]
    fn a_status_is_cut_to_a_bounded_line() {
        let by = "\u{1b}".repeat(100_000);
        let told = told(&Stage::Paused { by }, "jobs/x");
        assert!(told.ready);
        assert_eq!(told.status.chars().count(), STATUS_SHOWN + 3);
        assert!(!told.status.contains('\u{1b}'));
    }

    #[test]
    fn a_place_in_line_says_where_and_behind_whom() {
        let leads = Some("pid 42 on web-1 since 2026-12-07T00:00:00Z (token 7)".to_string());
        let said = [
            (None, None, "queued for jobs/x"),
            (Some(3), None, "queued for jobs/x: place 3 in line"),
            (
                None,
                leads.clone(),
                "queued for jobs/x; pid 42 on web-1 since 2026-12-07T00:00:00Z (token 7) leads",
            ),
            (
                Some(2),
                leads,
                "queued for jobs/x: place 2 in line; pid 42 on web-1 since 2026-12-07T00:00:00Z (token 7) leads",
            ),
        ];
        for (place, leads, status) in said {
            assert_eq!(
                told(&Stage::Queued { place, leads }, "jobs/x").status,
                status
            );
        }
    }

    /// A name or a holder with a newline cannot add an assignment (a
    /// `READY=1` of its own) to the datagram.
    #[test]
    fn a_status_is_one_line_whatever_the_names_hold() {
        let leads = Some("pid 1 on evil\nREADY=1".to_string());
        let told = told(
            &Stage::Queued {
                place: Some(2),
                leads,
            },
            "jobs/\nREADY=1",
        );
        assert!(!told.status.contains('\n'), "{}", told.status);
        assert!(
            told.status.chars().all(|c| !c.is_control()),
            "{}",
            told.status
        );
        assert_eq!(told.datagram().lines().count(), 2);
    }

    /// As sd_notify(3) reads NOTIFY_SOCKET: an absolute path, or `@` and a
    /// name in the abstract namespace; nothing else.
    #[test]
    fn the_socket_is_a_path_or_an_abstract_name() {
        let socket = |value: &str| Socket::from_env(Some(OsStr::new(value)));
        assert_eq!(
            socket("/run/systemd/notify"),
            Some(Socket::Path("/run/systemd/notify".into()))
        );
        assert_eq!(
            socket("@unit/42"),
            Some(Socket::Abstract(b"unit/42".to_vec()))
        );
        for ignored in ["", "@", "notify", "./notify", "vsock:2:1234"] {
            assert_eq!(socket(ignored), None, "{ignored}");
        }
        assert_eq!(Socket::from_env(None), None);
    }

    /// A socket whose reader stopped reading (its queue full) refuses the
    /// datagram at once: the run is never held up.
    #[test]
    fn a_full_socket_refuses_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let _deaf = UnixDatagram::bind(&path).unwrap();
        let socket = Socket::Path(path);
        let refused = (0..1000).find_map(|_| socket.send(b"STATUS=x\n").err());
        let refused = refused.expect("a full queue refuses");
        assert_eq!(refused.kind(), io::ErrorKind::WouldBlock, "{refused}");
    }

    #[test]
    fn an_abstract_socket_is_reached() {
        let name = format!("leaderrun-test-{}", std::process::id());
        let address = {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap()
        };
        let listening = UnixDatagram::bind_addr(&address).unwrap();
        let socket = Socket::from_env(Some(OsStr::new(&format!("@{name}")))).unwrap();
        socket.send(b"READY=1\n").unwrap();
        let mut buffer = [0; 64];
        let read = listening.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..read], b"READY=1\n");
    }
}
