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
/// again. It can also hold etcd's answers back ([`Proxy::delay_answers`]),
/// as a slow etcd or a congested link does, in order. Stops on drop.
pub struct Proxy {
    pub port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// How long etcd's answers are held before they go on, in
    /// milliseconds (0: at once).
    answers_late_by: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
        let answers_late_by = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (cut_flag, stop_flag) = (cut.clone(), stop.clone());
        let late_by = answers_late_by.clone();
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
                let (cut, stop) = (cut_flag.clone(), stop_flag.clone());
                let (from, to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || pump(from, to, cut, &stop, None));
                let (cut, stop, late_by) = (cut_flag.clone(), stop_flag.clone(), late_by.clone());
                std::thread::spawn(move || pump(server, client, cut, &stop, Some(&late_by)));
            }
        });
        Proxy {
            port,
            cut,
            stop,
            answers_late_by,
        }
    }

    /// Holds every answer from etcd for `late` before passing it on (in
    /// order); zero passes them at once again. Requests go at once.
    pub fn delay_answers(&self, late: Duration) {
        self.answers_late_by
            .store(late.as_millis() as u64, std::sync::atomic::Ordering::SeqCst);
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
    to: std::net::TcpStream,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: &std::sync::atomic::AtomicBool,
    late_by: Option<&std::sync::atomic::AtomicU64>,
) {
    use std::io::Read;
    use std::sync::atomic::Ordering;
    from.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    // What is read goes to a writer that holds each chunk until it is due
    // (at once, unless answers are delayed), so that a delay never slows
    // the reading, and bytes keep their order. A cut drops what is held
    // too, as a partition drops what is in flight.
    let (chunks, due) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    let cut_in_flight = cut.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut to = to;
        for (at, chunk) in due {
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if cut_in_flight.load(std::sync::atomic::Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
    let mut buffer = [0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if cut.load(Ordering::SeqCst) {
                    continue;
                }
                let late = late_by.map_or(0, |late| late.load(Ordering::SeqCst));
                let at = Instant::now() + Duration::from_millis(late);
                if chunks.send((at, buffer[..n].to_vec())).is_err() {
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
    drop(chunks);
    let _ = writer.join();
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
