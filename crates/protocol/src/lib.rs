//! leaderrun's protocol as pure state machines: fed what happened and the
//! time, asked what to do and when to wake (sans-IO, as quinn-proto keeps
//! a QUIC connection). leaderrun's run performs what they ask with etcd,
//! the job and the boot-time clock; its model checker and simulator
//! perform it in their modelled world, so that all of them drive the
//! same code.
//!
//! A crate of its own so that purity is the compiler's to hold: its
//! dependencies name nothing that does IO (leaderrun's `tests/purity.rs`
//! holds them to an allowance of pure crates), so it cannot name tokio,
//! etcd-client, nix or rustix; and a test below keeps the standard
//! library's IO and clocks out of its text.
//!
//! What it owns:
//! - [`table`]: what every event does in every phase of a run, the one
//!   place that decides;
//! - [`campaign`]: the campaign's state between events, with what each
//!   phase holds ([`stage`]) and the pace of its retries;
//! - [`lead`]: a leading run's states (its command running, its job being
//!   stopped); [`resign`]: the way out, with the rule of entitlement;
//! - [`renewal`]: the lease's keeper (every span of a lease's life from
//!   its TTL, the renewals due, the local deadline each acknowledgement
//!   gives, counted from its send);
//! - [`schedule`]: the kill schedule (when a stop starts, how long its
//!   grace lasts, what the lease says of a leading run and of a win about
//!   to start) and [`stop`], the kill sequence;
//! - its vocabulary, which the run converts to and from at its edge:
//!   [`time`] (instants given, never read), [`signal`], [`exit`] (every
//!   exit code, as data), [`loss`] (what can happen to a key or a place,
//!   and how a run ends), [`backoff`] (every retry's pace, seeded);
//! - the rules the run and the model checker apply to what etcd says:
//!   [`line`] (whether a key is still ours, whether a place runs, who
//!   runs), [`records`] (the run records' plan and guards) and
//!   [`window`] (the `--once-per` window's judgements);
//! - [`planted`]: the defects the model checker and simulator must catch.

pub mod backoff;
pub mod campaign;
pub mod exit;
pub mod lead;
pub mod line;
pub mod loss;
pub mod planted;
pub mod records;
pub mod renewal;
pub mod resign;
pub mod schedule;
pub mod signal;
pub mod stage;
pub mod stop;
pub mod table;
pub mod time;
pub mod window;

/// What tests (the protocol's own, and leaderrun's model checker) build
/// their instants and leases from, in milliseconds since boot.
pub mod testing {
    use std::time::Duration;

    use super::schedule::LeaseView;
    use super::time::Instant;

    pub fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    pub fn at(n: u64) -> Instant {
        Instant::from_boot(ms(n))
    }

    /// A lease alive until `expires`, as a leading run sees it.
    pub fn lease(expires: u64) -> LeaseView {
        LeaseView {
            expires: at(expires),
            gone: false,
        }
    }
}

#[cfg(test)]
mod tests {
    /// Each file of this crate, as written.
    const FILES: [(&str, &str); 18] = [
        ("lib.rs", include_str!("lib.rs")),
        ("backoff.rs", include_str!("backoff.rs")),
        ("campaign.rs", include_str!("campaign.rs")),
        ("exit.rs", include_str!("exit.rs")),
        ("lead.rs", include_str!("lead.rs")),
        ("line.rs", include_str!("line.rs")),
        ("loss.rs", include_str!("loss.rs")),
        ("planted.rs", include_str!("planted.rs")),
        ("records.rs", include_str!("records.rs")),
        ("renewal.rs", include_str!("renewal.rs")),
        ("resign.rs", include_str!("resign.rs")),
        ("schedule.rs", include_str!("schedule.rs")),
        ("signal.rs", include_str!("signal.rs")),
        ("stage.rs", include_str!("stage.rs")),
        ("stop.rs", include_str!("stop.rs")),
        ("table.rs", include_str!("table.rs")),
        ("time.rs", include_str!("time.rs")),
        ("window.rs", include_str!("window.rs")),
    ];

    /// What the standard library offers that no code here may name: its
    /// IO, and its clocks. (Crates that do IO cannot be named at all: the
    /// crate does not depend on them.)
    const FORBIDDEN: [&str; 10] = [
        "std::process",
        "std::net",
        "std::fs",
        "std::io",
        "std::env",
        "std::thread::sleep",
        "std::time::Instant",
        "SystemTime",
        "::now()",
        "unsafe",
    ];

    #[test]
    fn the_protocol_does_no_io_and_reads_no_clock() {
        for (file, text) in FILES {
            // Its own tests may do as they like.
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
            for line in code
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
            {
                for name in FORBIDDEN {
                    assert!(
                        !line.contains(name),
                        "crates/protocol/src/{file} names {name}: {line}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_check_sees_every_file() {
        let listed: Vec<&str> = FILES.iter().map(|(file, _)| *file).collect();
        let on_disk = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
            .expect("the crate's src is readable")
            .map(|entry| entry.unwrap().file_name().into_string().unwrap());
        for file in on_disk {
            assert!(listed.contains(&file.as_str()), "{file} is not checked");
        }
    }
}
