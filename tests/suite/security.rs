//! TLS with client certificates, and etcd's authentication, spelled as
//! etcdctl spells them; secrets stay out of help, logs and errors.

use crate::common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const PASSWORD: &str = "pw-9f3kQz1x";

fn tls_etcd() -> Etcd {
    Etcd::start_with(EtcdOptions {
        tls: true,
        ..EtcdOptions::default()
    })
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The token a `--name NAME -- sh -c 'echo $LEADERRUN_TOKEN'` run printed.
fn ran_with_token(done: &Finished) -> i64 {
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    done.stdout.trim().parse().expect("a token on stdout")
}

/// leaderrun at `endpoint` with `options`, running the job that prints its
/// token.
fn job(endpoint: &str, options: &[&str]) -> Command {
    let mut command = leaderrun(endpoint);
    command.args(with_command(options));
    command
}

fn run(command: &mut Command) -> Finished {
    run_within(command, Duration::from_secs(20))
}

/// --cacert, --cert and --key for the test's certificates.
fn tls_flags(pki: &pki::Pki) -> [&str; 6] {
    [
        "--cacert",
        path(&pki.ca),
        "--cert",
        path(&pki.client_cert),
        "--key",
        path(&pki.client_key),
    ]
}

/// `--name jobs/secure OPTIONS -- sh -c 'echo $LEADERRUN_TOKEN'`
fn with_command<'a>(options: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--name", "jobs/secure"];
    args.extend_from_slice(options);
    args.extend(["--", "sh", "-c", "echo $LEADERRUN_TOKEN"]);
    args
}

#[test]
fn tls_with_client_certificates_from_flags_and_from_etcdctl_variables() {
    let etcd = tls_etcd();
    let pki = etcd.pki.as_ref().unwrap();
    let flags = tls_flags(pki);
    let first = run(leaderrun(&etcd.endpoint()).args(with_command(&flags)));
    let first = ran_with_token(&first);

    // Bare host:port becomes https once any TLS option is given, as with
    // etcdctl; here the options come from ETCDCTL_* alone.
    let bare = format!("127.0.0.1:{}", etcd.client_port());
    let second = run(job(&bare, &[])
        .env("ETCDCTL_CACERT", &pki.ca)
        .env("ETCDCTL_CERT", &pki.client_cert)
        .env("ETCDCTL_KEY", &pki.client_key));
    assert!(
        ran_with_token(&second) > first,
        "a later leader, a larger token"
    );

    let status = run(leaderrun(&etcd.endpoint()).args(["status", "--name", "jobs/secure"]));
    assert_eq!(
        status.code,
        Some(125),
        "no certificates, no status: {}",
        status.stderr
    );
    let status = run(leaderrun(&etcd.endpoint())
        .args(["status", "--json", "--name", "jobs/secure"])
        .args(flags));
    assert_eq!(status.code, Some(3), "nobody leads now: {}", status.stderr);
}

/// `leaderrun check` over TLS with client certificates: verified against
/// --cacert; and an untrusted server is a problem (125) that names it.
#[test]
fn check_says_tls_was_verified_and_refuses_an_untrusted_server() {
    let etcd = tls_etcd();
    let pki = etcd.pki.as_ref().unwrap();
    let flags = tls_flags(pki);
    let mut command = leaderrun(&etcd.endpoint());
    command.args(["check", "--name", "jobs/secure"]).args(flags);
    let checked = run(&mut command);
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    assert!(
        checked.stdout.contains("TLS verified against --cacert"),
        "{}",
        checked.stdout
    );
    let mut untrusted = leaderrun(&etcd.endpoint());
    untrusted.args([
        "check",
        "--name",
        "jobs/secure",
        "--cert",
        path(&pki.client_cert),
        "--key",
        path(&pki.client_key),
    ]);
    let refused = run(&mut untrusted);
    assert_eq!(refused.code, Some(125), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("leaderrun: error: no endpoint of 1 could be used"),
        "{}",
        refused.stderr
    );
}

#[test]
fn an_untrusted_server_or_a_missing_client_certificate_is_one_line_and_125() {
    let etcd = tls_etcd();
    let pki = etcd.pki.as_ref().unwrap();

    // The system's roots do not know the test CA.
    let untrusted = run(&mut job(
        &etcd.endpoint(),
        &[
            "--cert",
            path(&pki.client_cert),
            "--key",
            path(&pki.client_key),
        ],
    ));
    assert_one_error_line(
        &untrusted,
        "UnknownIssuer (is its CA in --cacert?)",
        "untrusted",
    );

    // etcd requires a client certificate.
    let anonymous = run(&mut job(&etcd.endpoint(), &["--cacert", path(&pki.ca)]));
    assert_one_error_line(
        &anonymous,
        "does etcd want a client certificate?",
        "anonymous",
    );

    // A key where the certificate should be: a usage error that names the
    // file's fault, not an unreachable etcd or a failed handshake.
    let swapped = run(&mut job(
        &etcd.endpoint(),
        &[
            "--cacert",
            path(&pki.ca),
            "--cert",
            path(&pki.client_key),
            "--key",
            path(&pki.client_cert),
        ],
    ));
    assert_one_error_line(
        &swapped,
        "holds a private key, not a certificate",
        "swapped",
    );

    // --cert without --key is caught before any connection.
    let half = run(&mut job(
        &etcd.endpoint(),
        &["--cert", path(&pki.client_cert)],
    ));
    assert_one_error_line(&half, "--key", "half");

    let missing = run(&mut job(
        &etcd.endpoint(),
        &["--cacert", "/nonexistent/ca.pem"],
    ));
    assert_one_error_line(
        &missing,
        "cannot read --cacert /nonexistent/ca.pem",
        "missing",
    );
}

#[test]
fn insecure_skip_tls_verify_accepts_an_unknown_server_certificate() {
    let etcd = tls_etcd();
    let pki = etcd.pki.as_ref().unwrap();
    let done = run(job(
        &etcd.endpoint(),
        &[
            "--cert",
            path(&pki.client_cert),
            "--key",
            path(&pki.client_key),
        ],
    )
    .env("ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "true"));
    ran_with_token(&done);
}

#[test]
fn authentication_from_flags_and_variables() {
    let mut etcd = Etcd::start();
    etcd.enable_auth(PASSWORD);
    let inline = format!("root:{PASSWORD}");
    let first = run(&mut job(&etcd.endpoint(), &["--user", &inline]));
    let first = ran_with_token(&first);
    let second = run(&mut job(
        &etcd.endpoint(),
        &["--user", "root", "--password", PASSWORD],
    ));
    let second = ran_with_token(&second);
    let third = run(job(&etcd.endpoint(), &[])
        .env("ETCDCTL_USER", "root")
        .env("ETCDCTL_PASSWORD", PASSWORD));
    let third = ran_with_token(&third);
    assert!(first < second && second < third, "{first} {second} {third}");

    // USER:PASSWORD wins over an inherited ETCDCTL_PASSWORD (exported as
    // advised, or inherited by a nested leaderrun), even a stale one.
    let fourth = run(job(&etcd.endpoint(), &["--user", &inline]).env("ETCDCTL_PASSWORD", "stale"));
    assert!(ran_with_token(&fourth) > third);

    // status authenticates the same way.
    let status = run(leaderrun(&etcd.endpoint())
        .args(["status", "--name", "jobs/secure"])
        .env("ETCDCTL_USER", &inline));
    assert_eq!(status.code, Some(3), "{}", status.stderr);
}

#[test]
fn wrong_or_missing_credentials_are_one_line_and_125_without_the_password() {
    let mut etcd = Etcd::start();
    etcd.enable_auth(PASSWORD);
    let wrong = format!("{PASSWORD}-wrong");
    for (args, mentions) in [
        (
            vec!["--user", "root", "--password", wrong.as_str()],
            "authentication failed",
        ),
        (
            vec!["--user", "nobody", "--password", wrong.as_str()],
            "authentication failed",
        ),
        (vec![], "user name is empty"),
        (vec!["--user", "root"], "no password for etcd user 'root'"),
        (vec!["--password", wrong.as_str()], "--user"),
    ] {
        let done = run(leaderrun(&etcd.endpoint())
            .args(with_command(&args))
            .env("LEADERRUN_LOG", "warn"));
        assert_one_error_line(&done, mentions, mentions);
        assert!(!done.stderr.contains(PASSWORD), "{}", done.stderr);
        // Nothing logged at any level, by leaderrun or its libraries, may
        // carry it either.
        let traced = run(leaderrun(&etcd.endpoint())
            .args(with_command(&args))
            .arg("-vv")
            .env("LEADERRUN_LOG", "trace"));
        assert_eq!(traced.code, Some(125), "{}", traced.stderr);
        assert!(!traced.stderr.contains(PASSWORD), "{}", traced.stderr);
    }
}

#[test]
fn secrets_from_the_environment_never_show_in_help() {
    for args in [vec!["--help"], vec!["status", "--help"], vec!["-h"]] {
        let done = run(leaderrun("http://127.0.0.1:1")
            .args(&args)
            .env("ETCDCTL_USER", format!("root:{PASSWORD}"))
            .env("ETCDCTL_PASSWORD", PASSWORD));
        assert_eq!(done.code, Some(0), "{}", done.stderr);
        assert!(done.stdout.contains("--password"), "{}", done.stdout);
        assert!(
            !done.stdout.contains(PASSWORD),
            "{args:?} shows it: {}",
            done.stdout
        );
    }
}

/// An etcdctl inside the command reaches the same etcd, TLS and all, from
/// the ETCDCTL_* variables leaderrun sets: no flag repeated.
#[test]
fn etcdctl_in_the_command_reaches_the_same_tls_etcd() {
    let etcd = tls_etcd();
    let pki = etcd.pki.as_ref().unwrap();
    let etcdctl = etcdctl_binary();
    let bare = format!("127.0.0.1:{}", etcd.client_port());
    let done = run(leaderrun(&bare).args(tls_flags(pki)).args([
        "--name",
        "jobs/secure",
        "--",
        path(&etcdctl),
        "put",
        "/jobs/secure/written",
        "from the command",
    ]));
    assert_eq!(done.code, Some(0), "{}{}", done.stdout, done.stderr);
    assert_eq!(
        etcd.get("/jobs/secure/written").as_deref(),
        Some("from the command")
    );
}

/// A password leaderrun got as a flag never reaches the command's
/// environment; one it inherited does, as it would anyway, and then the
/// command also learns the user's name.
#[test]
fn no_password_is_added_to_the_commands_environment() {
    let mut etcd = Etcd::start();
    etcd.enable_auth(PASSWORD);
    let env_of = |flags: &[&str], inherited: Option<&str>| -> String {
        let mut command = leaderrun(&etcd.endpoint());
        command
            .args(flags)
            .args(["--name", "jobs/secure", "--", "env"])
            .env_remove("ETCDCTL_USER")
            .env_remove("ETCDCTL_PASSWORD");
        if let Some(password) = inherited {
            command.env("ETCDCTL_PASSWORD", password);
        }
        let done = run(&mut command);
        assert_eq!(done.code, Some(0), "{flags:?}: {}", done.stderr);
        done.stdout
    };
    let inline = format!("root:{PASSWORD}");
    for flags in [
        vec!["--user", inline.as_str()],
        vec!["--user", "root", "--password", PASSWORD],
    ] {
        let env = env_of(&flags, None);
        assert!(!env.contains(PASSWORD), "{flags:?}: {env}");
        assert!(!env.contains("ETCDCTL_USER"), "{flags:?}: {env}");
    }
    let env = env_of(&["--user", "root"], Some(PASSWORD));
    assert!(env.lines().any(|line| line == "ETCDCTL_USER=root"), "{env}");
}

/// --redact-args keeps the arguments out of etcd: `status` shows only the
/// program, and neither the value nor the --once-per marker holds them.
#[test]
fn redacted_arguments_never_reach_etcd() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "echo $$ > '{}'; exec sleep 1000 # secret-arg",
        pidfile.display()
    );
    let _leader = lr(&etcd)
        .name("jobs/redact")
        .args(["--redact-args", "--once-per", "1h"])
        .spawn(["sh", "-c", &script]);
    read_pid(&pidfile, Duration::from_secs(20));
    let status =
        run(leaderrun(&etcd.endpoint()).args(["status", "--json", "--name", "jobs/redact"]));
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["holder"]["command"], "sh [arguments redacted]");
    assert_eq!(status["last_run"]["command"], "sh [arguments redacted]");
    let (key, _, _) = etcd.candidates("jobs/redact")[0].clone();
    for key in [key.as_str(), "jobs/redact.once-per"] {
        let value = etcd.get(key).unwrap();
        assert!(!value.contains("secret-arg"), "{key}: {value}");
    }
}

/// The hints that point at leaderrun's own options, each triggered for
/// real: they read the errors' types (and etcd's own refusal text, which
/// this pins).
#[test]
fn hints_name_the_option_to_check() {
    let etcd = tls_etcd();
    let plain = format!("http://127.0.0.1:{}", etcd.client_port());
    let done = run(&mut job(&plain, &[]));
    assert_one_error_line(&done, "use https://", "plain text to a TLS port");

    let mut etcd = Etcd::start();
    etcd.enable_auth(PASSWORD);
    let done = run(&mut job(&etcd.endpoint(), &[]));
    assert_one_error_line(&done, "give --user", "no user for an etcd with auth");
}

/// Replaces `path` with `from`'s content the way a renewed Secret does
/// (a new file renamed over the old one): nobody sees half of it.
fn renew_in_place(path: &Path, from: &Path) {
    let next = path.with_extension("next");
    std::fs::copy(from, &next).unwrap();
    std::fs::rename(&next, path).unwrap();
}

/// A leader and a waiter of `jobs/secure`, TLS with the test's client
/// certificate files, `waiter_job` the waiter's command: the leader, its
/// command's pid, the waiter (watching).
fn tls_leader_and_waiter(
    etcd: &Etcd,
    dir: &Path,
    ttl: Duration,
    waiter_job: &str,
) -> (Replica, i32, Replica) {
    let pki = etcd.pki.as_ref().unwrap();
    let pidfile = dir.join("pid");
    let leader = Replica::spawn(
        leaderrun(&etcd.endpoint())
            .args(tls_flags(pki))
            .args(["--ttl", &seconds(ttl), "--name", "jobs/secure", "--"])
            .args(pid_job(&pidfile)),
    );
    let job = read_pid(&pidfile, Duration::from_secs(20));
    let waiter = Replica::spawn(leaderrun(&etcd.endpoint()).args(tls_flags(pki)).args([
        "--ttl",
        &seconds(ttl),
        "--name",
        "jobs/secure",
        "--wait",
        "-vv",
        "--log-format",
        "json",
        "--",
        "sh",
        "-c",
        waiter_job,
    ]));
    waiter.await_watching(Duration::from_secs(20));
    (leader, job, waiter)
}

/// Client certificates renewed in place on disk (as cert-manager renews a
/// Kubernetes Secret) while replicas wait, here with a new CA that etcd
/// trusts from its restart on, and no longer the old one. Every new
/// connection reads the files again: the leader rides out the restart,
/// and the waiter takes over with the renewed certificate once the leader
/// is done, rather than being refused for ever with the one it read at
/// its start.
#[test]
fn certificates_renewed_on_disk_are_read_again_when_reconnecting() {
    let mut etcd = tls_etcd();
    let ttl = Duration::from_secs(6);
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let touch = format!("touch '{}'", ran.display());
    let (mut leader, job, mut waiter) = tls_leader_and_waiter(&etcd, dir.path(), ttl, &touch);

    let renewed_dir = tempfile::tempdir().unwrap();
    let renewed = pki::Pki::generate(renewed_dir.path());
    let pki = etcd.pki.as_ref().unwrap();
    renew_in_place(&pki.client_cert, &renewed.client_cert);
    renew_in_place(&pki.client_key, &renewed.client_key);
    etcd.restart_trusting(&renewed.ca);

    // The leader renews over a new connection, with the new certificate.
    let (_, _, lease) = etcd.candidates("jobs/secure")[0];
    let restarted = std::time::Instant::now();
    await_condition(ttl * 2, "a renewal after the restart", || {
        restarted.elapsed() >= ttl / 2
            && etcd
                .lease_left(lease)
                .is_some_and(|left| left >= ttl - Duration::from_secs(1))
    });
    send(job, nix::sys::signal::Signal::SIGTERM);
    let (code, stderr) = leader.finish(Duration::from_secs(20));
    assert_eq!(code, Some(128 + 15), "its command's own status: {stderr}");
    let (code, stderr) = waiter.finish(Duration::from_secs(20));
    assert_eq!(code, Some(0), "the waiter took over: {stderr}");
    assert!(ran.exists(), "the waiter's command ran");
}

/// A waiter whose certificate etcd refuses once it reconnects (etcd
/// restarted trusting another CA, and the files on disk not renewed):
/// no wait changes that, so it fails in one line and 125, for its
/// supervisor to restart it, rather than waiting for ever.
#[test]
fn a_waiter_whose_certificate_is_refused_after_a_reconnect_fails_in_one_line() {
    let mut etcd = tls_etcd();
    let ttl = Duration::from_secs(6);
    let dir = tempfile::tempdir().unwrap();
    let (_leader, _job, mut waiter) = tls_leader_and_waiter(&etcd, dir.path(), ttl, "true");

    let other_dir = tempfile::tempdir().unwrap();
    let other = pki::Pki::generate(other_dir.path());
    // The test's own client needs a certificate the new CA signed; the
    // replicas keep the files they were given.
    let pki = etcd.pki.as_mut().unwrap();
    pki.client_cert = other.client_cert.clone();
    pki.client_key = other.client_key.clone();
    etcd.restart_trusting(&other.ca);

    let (code, stderr) = waiter.finish(Duration::from_secs(20));
    assert_eq!(code, Some(125), "{stderr}");
    let own = own_lines(&stderr);
    assert_eq!(own.len(), 1, "one line of its own: {stderr}");
    eprintln!("{}", own[0]);
    assert!(
        own[0].contains("etcd refused the client certificate"),
        "{stderr}"
    );
}
