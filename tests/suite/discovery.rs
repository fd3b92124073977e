//! etcd found the way etcdctl finds it: DNS SRV discovery against a real
//! DNS server (dnsmasq), etcdctl's timeouts, and the `ETCDCTL_*`
//! variables leaderrun does not honour refused, never let be.

use crate::common::*;
use std::process::Command;
use std::time::Duration;

const DOMAIN: &str = "etcd.test";

/// leaderrun with no endpoints of the harness's: only what a test gives,
/// and the test's DNS server for its look-ups.
fn discovering(dns: &Dns) -> Command {
    let mut command = leaderrun("unused");
    command
        .env_remove("LEADERRUN_ENDPOINTS")
        .env("LEADERRUN_TEST_NAMESERVER", dns.nameserver());
    command
}

fn plain(port: u16) -> Srv {
    Srv {
        service: "_etcd-client._tcp",
        target: "localhost",
        port,
    }
}

#[test]
fn discovery_finds_etcd_by_its_srv_records() {
    let etcd = Etcd::shared();
    let dns = Dns::start(DOMAIN, &[plain(etcd.client_port())]);
    let name = unique("jobs/discovered");
    let done = run_within(
        discovering(&dns)
            .env("ETCDCTL_DISCOVERY_SRV", DOMAIN)
            .args(["-v", "--ttl", "9s", "--name", &name])
            .args(["--", "sh", "-c", "echo $ETCDCTL_ENDPOINTS"]),
        SOON,
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let port = etcd.client_port();
    assert_eq!(done.stdout.trim(), format!("http://localhost:{port}"));
    assert!(
        done.stderr.contains(&format!(
            "discovery _etcd-client-ssl._tcp.{DOMAIN}, _etcd-client._tcp.{DOMAIN} (ETCDCTL_DISCOVERY_SRV)"
        )),
        "-v says where the endpoints came from: {}",
        done.stderr
    );
    assert!(done.stderr.contains("ttl 9s (--ttl)"), "{}", done.stderr);
    // check reports the endpoint found, and where from.
    let checked = run_within(
        discovering(&dns).args(["check", "--name", &name, "--discovery-srv", DOMAIN]),
        SOON,
    );
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    assert!(
        checked
            .stdout
            .contains(&format!("http://localhost:{port}: reached")),
        "{}",
        checked.stdout
    );
    assert!(
        checked.stdout.contains("(--discovery-srv)"),
        "{}",
        checked.stdout
    );
}

/// A host with only a discovery variable set, and no record to find: one
/// line, 125, and never a dial of 127.0.0.1:2379.
#[test]
fn discovery_that_finds_nothing_never_falls_back_to_localhost() {
    let dns = Dns::start(DOMAIN, &[]);
    let done = run_within(
        discovering(&dns)
            .env("ETCDCTL_DISCOVERY_SRV", DOMAIN)
            .args(["--", "true"]),
        SOON,
    );
    assert_one_error_line(
        &done,
        "DNS SRV discovery of etcd.test found no etcd endpoint",
        "no records",
    );
    assert!(
        done.stderr
            .contains("_etcd-client-ssl._tcp.etcd.test: no such record"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr.contains("does not fall back"),
        "{}",
        done.stderr
    );
    assert!(!done.stderr.contains("127.0.0.1:2379"), "{}", done.stderr);
    // Only http records, and --insecure-discovery=false: none taken.
    let etcd = Etcd::shared();
    let dns = Dns::start(DOMAIN, &[plain(etcd.client_port())]);
    let strict = run_within(
        discovering(&dns)
            .env("ETCDCTL_DISCOVERY_SRV", DOMAIN)
            .env("ETCDCTL_INSECURE_DISCOVERY", "false")
            .args(["--", "true"]),
        SOON,
    );
    assert_one_error_line(
        &strict,
        "only http endpoints, and --insecure-discovery=false",
        "strict",
    );
    // --endpoints given as an option comes before a discovery domain in
    // the environment.
    let chosen = run_within(
        discovering(&dns)
            .env("ETCDCTL_DISCOVERY_SRV", "nothing.test")
            .args([
                "--endpoints",
                &etcd.endpoint(),
                "--name",
                &unique("jobs/chosen"),
                "--",
                "true",
            ]),
        SOON,
    );
    assert_eq!(chosen.code, Some(0), "{}", chosen.stderr);
    // An empty --discovery-srv ("$DOMAIN", unset) is a mistake, not the
    // default endpoint.
    let empty = run_within(
        discovering(&dns).args(["--discovery-srv", "", "--", "true"]),
        SOON,
    );
    assert_one_error_line(&empty, "--discovery-srv is empty", "empty");
}

/// A leader whose members move: DNS first names member 0 alone, then
/// members 1 and 2; member 0 dies. When every endpoint it knows fails, the
/// run looks the records up again and carries on with the new ones: its
/// command is never stopped.
#[test]
fn endpoints_are_looked_up_again_when_every_one_fails() {
    let mut etcd = Etcd::start_with(EtcdOptions {
        members: 3,
        ..EtcdOptions::default()
    });
    etcd.await_raft_leader();
    let port = |member| etcd.member_client_port(member);
    let mut dns = Dns::start(DOMAIN, &[plain(port(0))]);
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    let mut leader = Replica::spawn(
        discovering(&dns)
            .env("ETCDCTL_DISCOVERY_SRV", DOMAIN)
            .args(["-v", "--ttl", "6s", "--name", "jobs/moving", "--"])
            .args(["sh", "-c", &until_exists(&release)]),
    );
    await_condition(SOON, "the leader", || {
        !etcd.candidates("jobs/moving").is_empty()
    });
    dns.restart_with(&[plain(port(1)), plain(port(2))]);
    if etcd.raft_leader() == Some(0) {
        etcd.move_raft_leader(1);
    }
    etcd.kill_member(0);
    await_condition(LIMIT, "the run to find the new endpoints", || {
        leader
            .stderr_so_far()
            .contains("DNS SRV discovery found other etcd endpoints")
    });
    // Its lease renewed through them, past a whole TTL.
    let (_, _, lease) = etcd.candidates("jobs/moving")[0];
    let renewed = || {
        etcd.lease_left(lease)
            .is_some_and(|left| left > Duration::from_secs(4))
    };
    await_condition(LIMIT, "a renewal through the new endpoints", renewed);
    std::fs::write(&release, "").unwrap();
    let (code, stderr) = leader.finish(LIMIT);
    assert_eq!(code, Some(0), "the command ran to its end: {stderr}");
}

/// etcdctl's timeouts, as etcdctl waits: their sum. Against an endpoint
/// that takes connections and never answers, a run gives up within it.
#[test]
fn etcdctls_timeouts_bound_the_wait() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("127.0.0.1:{}", silent.local_addr().unwrap().port());
    let done = run_within(
        leaderrun(&endpoint)
            .env("ETCDCTL_DIAL_TIMEOUT", "1s")
            .env("ETCDCTL_COMMAND_TIMEOUT", "1s")
            .args(["--", "true"]),
        SOON,
    );
    assert_eq!(done.code, Some(125), "{}", done.stderr);
    assert!(
        done.took >= Duration::from_millis(1500) && done.took < Duration::from_millis(4500),
        "gave up after {:?}, not within 2s (the default is 5s): {}",
        done.took,
        done.stderr
    );
    let checked = run_within(
        leaderrun(&endpoint)
            .env("ETCDCTL_COMMAND_TIMEOUT", "1s")
            .args(["check", "--name", "x"]),
        SOON,
    );
    assert!(
        checked.stdout.contains("dial-timeout  3s (dial 2s from etcdctl's default + command 1s from ETCDCTL_COMMAND_TIMEOUT)"),
        "{}",
        checked.stdout
    );
    let bad = run_within(
        leaderrun(&endpoint)
            .env("ETCDCTL_DIAL_TIMEOUT", "5")
            .args(["--", "true"]),
        SOON,
    );
    assert_one_error_line(
        &bad,
        "ETCDCTL_DIAL_TIMEOUT (ETCDCTL_DIAL_TIMEOUT): '5'",
        "a number without a unit",
    );
}

/// Every variable etcdctl documents is honoured, or refused when set:
/// never silently let be. etcdctl's output settings say nothing of
/// reaching etcd and are let be; ETCDCTL_API=3 is what leaderrun speaks.
#[test]
fn etcdctl_variables_leaderrun_does_not_honour_are_refused() {
    let etcd = Etcd::shared();
    for (name, value) in [
        ("ETCDCTL_KEEPALIVE_TIME", "2s"),
        ("ETCDCTL_KEEPALIVE_TIMEOUT", "6s"),
        ("ETCDCTL_MAX_REQUEST_BYTES", "100"),
        ("ETCDCTL_MAX_RECV_BYTES", "100"),
        ("ETCDCTL_AUTH_JWT_TOKEN", "x"),
        ("ETCDCTL_API", "2"),
    ] {
        let done = lr(etcd).env(name, value).run_within(["true"], SOON);
        assert_one_error_line(&done, name, name);
    }
    for (name, value) in [
        ("ETCDCTL_API", "3"),
        ("ETCDCTL_WRITE_OUT", "json"),
        ("ETCDCTL_HEX", "true"),
        ("ETCDCTL_DEBUG", "false"),
    ] {
        let done = lr(etcd)
            .env(name, value)
            .name(&unique("jobs/let-be"))
            .run_within(["true"], SOON);
        assert_eq!(done.code, Some(0), "{name}: {}", done.stderr);
    }
    // ETCDCTL_INSECURE_TRANSPORT=false: a bare endpoint is dialled with TLS
    // (this etcd speaks none: the handshake fails).
    let tls = run_within(
        leaderrun(&etcd.endpoint().replace("http://", ""))
            .env("ETCDCTL_INSECURE_TRANSPORT", "false")
            .args(["--", "true"]),
        SOON,
    );
    assert_eq!(tls.code, Some(125), "{}", tls.stderr);
    assert!(tls.stderr.contains("https://"), "{}", tls.stderr);
}
