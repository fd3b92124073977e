//! The run's protocol as pure state machines: fed what happened and the
//! time, asked what to do and when to wake (sans-IO, as quinn-proto keeps
//! a QUIC connection). The run (`run`) performs what they ask with etcd,
//! the job and the boot-time clock; the model checker (`model`) performs
//! it in its modelled world, so that both drive the same code.
//!
//! Here now: the table of what every event does in every phase
//! ([`table`]), the campaign's state between events ([`campaign`]: its
//! phase with what it holds ([`stage`]: the lease, our place, the proof,
//! the run's or nothing), what it has learnt, the pace of its retries),
//! a leading run's states ([`lead`]: its command running, its job being
//! stopped, its resignation, each asking the table and saying what to do),
//! the kill schedule
//! ([`schedule`]: when a stop starts, how long its grace lasts, what the
//! lease says of a leading run and of a win about to start) and the kill
//! sequence ([`stop`]). Nothing here does IO
//! or reads a clock: it imports no tokio, etcd-client, nix, rustix,
//! `std::process`, `std::net` or `std::fs`, and calls nothing of
//! `clock::Instant` that reads the clock; a test below checks that.

pub mod campaign;
pub mod lead;
pub mod schedule;
pub mod stage;
pub mod stop;
pub mod table;

/// What the protocol's tests build their instants and leases from, in
/// milliseconds since boot.
#[cfg(test)]
pub(crate) mod testing {
    use std::time::Duration;

    use super::schedule::LeaseView;
    use crate::clock::Instant;

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
    /// Each file of this module, as written.
    const FILES: [(&str, &str); 7] = [
        ("mod.rs", include_str!("mod.rs")),
        ("campaign.rs", include_str!("campaign.rs")),
        ("lead.rs", include_str!("lead.rs")),
        ("schedule.rs", include_str!("schedule.rs")),
        ("stage.rs", include_str!("stage.rs")),
        ("stop.rs", include_str!("stop.rs")),
        ("table.rs", include_str!("table.rs")),
    ];

    /// What no code here may name: IO, and the clock read.
    const FORBIDDEN: [&str; 13] = [
        "tokio",
        "etcd_client",
        "nix::",
        "rustix",
        "std::process",
        "std::net",
        "std::fs",
        "std::time::Instant",
        "SystemTime",
        "::now()",
        ".has_passed()",
        ".remaining()",
        ".elapsed()",
    ];

    #[test]
    fn the_protocol_does_no_io_and_reads_no_clock() {
        for (file, text) in FILES {
            // Its own tests may build instants as they like.
            let code = text.split("#[cfg(test)]").next().unwrap_or(text);
            for line in code
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
            {
                for name in FORBIDDEN {
                    assert!(
                        !line.contains(name),
                        "src/protocol/{file} names {name}: {line}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_check_sees_every_file() {
        let listed: Vec<&str> = FILES.iter().map(|(file, _)| *file).collect();
        let on_disk = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/protocol"))
            .expect("src/protocol is readable")
            .map(|entry| entry.unwrap().file_name().into_string().unwrap());
        for file in on_disk {
            assert!(listed.contains(&file.as_str()), "{file} is not checked");
        }
    }
}
