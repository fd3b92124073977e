//! etcd answers the simulation's script as the simulated etcd does
//! (`tests/facts/etcd.rs`): each thing the simulation assumes of etcd,
//! pinned against a real one, on every version the suite runs against.

use crate::common::etcd::Etcd;

#[path = "../facts/etcd.rs"]
mod facts;

#[test]
fn etcd_answers_the_simulations_script_as_it_assumes() {
    // An etcd of its own: the script compacts the history.
    let etcd = Etcd::start();
    let lines = etcd.with(async |client| facts::transcript(client, "facts/").await);
    assert_eq!(lines, facts::EXPECTED);
}
