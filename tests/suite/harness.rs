//! The harness itself: a port is handed out once per test process, and an
//! etcd that finds one of its ports taken starts again on new ones.

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
