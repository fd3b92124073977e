//! Faults between leaderrun and etcd: a proxy that can be cut (a partition),
//! an endpoint that never answers, and the check that a leader rode a fault
//! out.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use super::await_condition;
use super::etcd::Etcd;
use super::processes::alive;

/// A leader a test expects to ride out a fault: its election, TTL, child
/// and key (as [`Etcd::candidates`] lists it).
pub struct Leader {
    pub name: String,
    pub ttl: Duration,
    pub child: i32,
    pub key: (String, i64, i64),
}

impl Leader {
    /// The leader survived a fault that ended at `fault`: its lease is seen
    /// renewed after the fault (awaited), and until `hold` after the fault
    /// its child runs; then its key still leads.
    pub fn assert_survives(&self, etcd: &Etcd, what: &str, fault: Instant, hold: Duration) {
        let (key, token, lease) = &self.key;
        let ttl = self.ttl;
        assert!(
            ttl > Duration::from_secs(4),
            "a renewal is told from an extension only for a TTL over 4s"
        );
        // Half a TTL after the fault, a lease not renewed since has at most
        // TTL/2 left, and a second more if etcd extended it on a raft
        // leader change: seeing nearly all of it means a renewal went
        // through.
        let renewed = await_condition(ttl * 2, &format!("a renewal after {what}"), || {
            fault.elapsed() >= ttl / 2
                && etcd
                    .lease_left(*lease)
                    .is_some_and(|left| left >= ttl - Duration::from_secs(1))
        });
        while fault.elapsed() < hold {
            assert!(alive(self.child), "{what}: the child was stopped");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            etcd.candidates(&self.name)
                .first()
                .map(|first| (&first.0, first.1)),
            Some((key, *token)),
            "{what}: leadership kept, under the same key and token"
        );
        eprintln!(
            "{what}: lease seen renewed {renewed:?} after the fault; child alive for {hold:?}"
        );
    }
}

/// A TCP proxy on loopback that can be cut: while cut, connections stay open
/// and new ones are accepted, but every byte is silently dropped, as in a
/// network partition (not a refused connection). Healing lets bytes through
/// again. Stops on drop.
pub struct Proxy {
    pub port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    pub fn start(upstream_port: u16) -> Proxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (cut_flag, stop_flag) = (cut.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop_flag.load(Ordering::Relaxed) {
                let client = match listener.accept() {
                    Ok((client, _)) => client,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream_port)) else {
                    continue;
                };
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let (cut, stop) = (cut_flag.clone(), stop_flag.clone());
                    std::thread::spawn(move || pump(from, to, &cut, &stop));
                }
            }
        });
        Proxy { port, cut, stop }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn heal(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

fn pump(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    cut: &std::sync::atomic::AtomicBool,
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    from.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buffer = [0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if !cut.load(Ordering::SeqCst) && to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// An endpoint that accepts connections and never answers a byte: a hung
/// etcd, or one behind a black hole. Holds every connection open.
pub struct SilentEndpoint {
    pub endpoint: String,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl SilentEndpoint {
    pub fn start() -> SilentEndpoint {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let accepted = std::sync::Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for connection in listener.incoming().map_while(Result::ok) {
                held.push(connection);
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        SilentEndpoint { endpoint, accepted }
    }

    /// How many connections it has accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}
