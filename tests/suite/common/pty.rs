//! Pseudo-terminals: a process started on one as its controlling terminal,
//! an interactive bash, and reading the terminal until something shows.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::etcd::Etcd;

/// Reads the terminal's master side until `needle` shows up; panics after
/// `limit`. Returns everything read.
pub fn read_until(master: &mut std::fs::File, needle: &str, limit: Duration) -> String {
    use std::io::Read;
    super::stalls::watch();
    let started = Instant::now();
    let mut seen = String::new();
    let mut buffer = [0u8; 1024];
    while !seen.contains(needle) {
        assert!(
            !super::stalls::past(started, limit),
            "no {needle:?} on the terminal; saw {seen:?}"
        );
        match master.read(&mut buffer) {
            Ok(0) => std::thread::sleep(Duration::from_millis(10)),
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(err) => panic!("reading the terminal: {err}; saw {seen:?}"),
        }
    }
    seen
}

/// A fresh pseudo-terminal. The test keeps a descriptor of the slave side,
/// to read its modes with `tcgetattr`; the master side does not block.
pub struct Pty {
    pub master: std::fs::File,
    pub slave: std::os::fd::OwnedFd,
}

impl Pty {
    pub fn open() -> Pty {
        Pty::open_sized(None)
    }

    /// A pseudo-terminal `columns` wide (None: no size, which programs
    /// read as 80 columns).
    pub fn open_sized(columns: Option<u16>) -> Pty {
        let size = columns.map(|columns| nix::pty::Winsize {
            ws_row: 24,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        });
        let pty = nix::pty::openpty(size.as_ref(), None).expect("a pseudo-terminal");
        let master = std::fs::File::from(pty.master);
        nix::fcntl::fcntl(
            &master,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .unwrap();
        Pty {
            master,
            slave: pty.slave,
        }
    }

    /// Starts `command` as a session leader with this terminal as its
    /// controlling terminal and stdio, the way a terminal emulator starts a
    /// shell.
    pub fn spawn(&self, command: &mut Command) -> Child {
        use std::os::unix::process::CommandExt;
        let slave = || Stdio::from(self.slave.try_clone().unwrap());
        command.stdin(slave()).stdout(slave()).stderr(slave());
        // SAFETY: setsid and ioctl are async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                nix::unistd::setsid()?;
                if nix::libc::ioctl(0, nix::libc::TIOCSCTTY as _, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.spawn().expect("starts on the terminal")
    }
}

/// A real interactive bash (job control on) on a fresh pseudo-terminal,
/// with `$LR` naming leaderrun and its endpoints set to `etcd`, at its
/// first prompt (`$ `).
pub fn interactive_bash(etcd: &Etcd) -> (Child, std::fs::File) {
    let (bash, mut master) = spawn_on_pty(
        Command::new("bash")
            .args(["--norc", "--noprofile", "-i"])
            .env("PS1", "$ ")
            .env("TERM", "dumb")
            .env("LR", env!("CARGO_BIN_EXE_leaderrun"))
            .env("LEADERRUN_ENDPOINTS", etcd.endpoint()),
    );
    read_until(&mut master, "$ ", Duration::from_secs(10));
    (bash, master)
}

/// Starts `command` on a fresh pseudo-terminal (see [`Pty::spawn`]).
/// Returns the process and the terminal's master side.
pub fn spawn_on_pty(command: &mut Command) -> (Child, std::fs::File) {
    let pty = Pty::open();
    let process = pty.spawn(command);
    (process, pty.master)
}
