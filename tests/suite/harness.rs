//! The harness itself: a port is handed out once per test process, an
//! etcd that finds one of its ports taken starts again on new ones, and a
//! stall of the test process is taken out of the time its bounds measure.

use crate::common::*;

#[test]
fn free_port_never_hands_out_a_port_twice() {
    let callers: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(|| (0..100).map(|_| free_port()).collect::<Vec<u16>>()))
        .collect();
    let mut ports: Vec<u16> = callers
        .into_iter()
        .flat_map(|caller| caller.join().unwrap())
        .collect();
    let handed_out = ports.len();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), handed_out, "a port was handed out twice");
}

#[test]
fn an_etcd_whose_port_is_taken_starts_again_on_new_ports() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let etcd = Etcd::start_with(EtcdOptions {
        first_client_port: Some(port),
        ..EtcdOptions::default()
    });
    assert_ne!(etcd.client_port(), port, "it claims the taken port");
    etcd.put("harness", "answers", 0);
    assert_eq!(etcd.get("harness").as_deref(), Some("answers"));
}

/// The test process stopped for a second (SIGSTOP, then SIGCONT from a
/// process of its own), as a paused machine stops it: the stall is seen,
/// and taken out of what [`active_since`] measures; the time beside it is
/// not.
#[test]
fn a_stall_of_the_test_process_is_not_counted() {
    use std::time::{Duration, Instant};
    stalls::watch();
    let began = Instant::now();
    let pid = std::process::id();
    let mut stopper = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("kill -STOP {pid}; sleep 1; kill -CONT {pid}"),
        ])
        .spawn()
        .unwrap();
    let stopper = wait_within(&mut stopper, SOON, "the stopper");
    assert!(stopper.success(), "the stopper: {stopper}");
    std::thread::sleep(Duration::from_millis(300));
    let (elapsed, active) = (began.elapsed(), active_since(began));
    eprintln!("{elapsed:?} passed, {active:?} of it running");
    assert!(elapsed >= Duration::from_millis(1300), "{elapsed:?}");
    assert!(
        active < elapsed - Duration::from_millis(700),
        "the stall was counted: {active:?} of {elapsed:?}"
    );
    assert!(
        active >= Duration::from_millis(300),
        "the time beside it was not: {active:?} of {elapsed:?}"
    );
}

/// `killed` tells a live process, running or stopped, from one that will
/// run none of its own code again: so a bound on a kill cannot pass on a
/// process that still runs.
#[test]
fn killed_is_false_for_a_live_process_and_true_once_sigkilled() {
    let mut sleep = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = sleep.id() as i32;
    assert!(!killed(pid), "a sleeping process");
    stop(pid);
    assert!(!killed(pid), "a stopped process");
    send(pid, nix::sys::signal::Signal::SIGKILL);
    await_condition(SOON, "the process to be killed", || killed(pid));
    sleep.wait().unwrap();
    assert!(killed(pid), "a reaped process");
}
