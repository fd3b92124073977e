//! README's CI example, fencing recipe and dead-man's-switch ping, run as
//! written (the blocks are read out of README.md), under `set -e` and with
//! nothing but leaderrun's own flags to say where etcd is. README's
//! crontab lines run in `install.rs`, against the installed package.

use crate::common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A PATH with this build's leaderrun first, then the system's.
fn path_with_leaderrun() -> String {
    let binary = Path::new(env!("CARGO_BIN_EXE_leaderrun"));
    format!("{}:/usr/bin:/bin", binary.parent().unwrap().display())
}

/// `sh -c script` in `dir`, in an environment of only PATH, HOME and
/// `variables`, as a CI runner or cron would run it.
fn script_command(dir: &Path, script: &str, variables: &[(&str, &str)]) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env_clear()
        .env("PATH", path_with_leaderrun())
        .env("HOME", dir)
        .envs(variables.iter().copied())
        .stdin(Stdio::null());
    command
}

/// Runs `script` as [`script_command`] has it, to its end.
fn run_script(dir: &Path, script: &str, variables: &[(&str, &str)]) -> Finished {
    run_within(
        &mut script_command(dir, script, variables),
        Duration::from_secs(60),
    )
}

/// `./deploy.sh`, which exits with `code`.
fn deploy_script(dir: &Path, code: i32) {
    let script = dir.join("deploy.sh");
    std::fs::write(&script, format!("#!/bin/sh\necho deploying\nexit {code}\n")).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

#[test]
fn the_ci_example_reports_every_outcome_under_set_e() {
    let etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let example = readme_block("ci");
    assert!(example.starts_with("set -e"), "{example}");
    let dir = tempfile::tempdir().unwrap();
    let variables = [("LEADERRUN_ENDPOINTS", endpoint.as_str())];

    deploy_script(dir.path(), 0);
    let done = run_script(dir.path(), &example, &variables);
    assert_eq!(done.code, Some(0), "{}{}", done.stdout, done.stderr);
    assert_eq!(done.stdout, "deploying\ndeployed\n");

    // A failing deploy: under `set -e`, a bare `leaderrun ...; case $?`
    // would end the script before the case.
    deploy_script(dir.path(), 3);
    let done = run_script(dir.path(), &example, &variables);
    assert_eq!(done.code, Some(3), "{}{}", done.stdout, done.stderr);
    assert!(
        done.stdout.ends_with("the deploy failed with 3\n"),
        "{}",
        done.stdout
    );

    // Another deploy holds the lock past the wait (shortened from 10m).
    let _other = Lr::at(&endpoint).name("deploy/prod").spawn(["sleep", "60"]);
    await_condition(Duration::from_secs(20), "the other deploy to lead", || {
        etcd.candidates("deploy/prod").len() == 1
    });
    let waited = example.replace("--wait-timeout 10m", "--wait-timeout 1s");
    assert_ne!(waited, example, "the example has --wait-timeout 10m");
    let done = run_script(dir.path(), &waited, &variables);
    assert_eq!(done.code, Some(75), "{}{}", done.stdout, done.stderr);
    assert_eq!(done.stdout, "another deploy held the lock for 10 minutes\n");
}

#[test]
fn the_fencing_recipe_reaches_leaderruns_etcd_and_reads_etcdctls_answer() {
    let etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("recipe.sh");
    std::fs::write(&recipe, readme_block("fencing")).unwrap();
    let etcdctl = etcdctl_binary();
    let path = format!(
        "{}:{}",
        etcdctl.parent().unwrap().display(),
        path_with_leaderrun()
    );

    // Only --endpoints says where etcd is: the etcdctl inside learns it from
    // leaderrun, and does not wander off to 127.0.0.1:2379.
    let done = run_within(
        Command::new(env!("CARGO_BIN_EXE_leaderrun"))
            .args([
                "--endpoints",
                &endpoint,
                "--name",
                "jobs/nightly",
                "--",
                "sh",
            ])
            .arg(&recipe)
            .env_clear()
            .env("PATH", &path)
            .stdin(Stdio::null()),
        Duration::from_secs(60),
    );
    assert_eq!(done.code, Some(0), "{}{}", done.stdout, done.stderr);
    assert!(
        done.stdout.starts_with("written under token "),
        "{}",
        done.stdout
    );
    assert_eq!(etcd.get("/jobs/nightly/result").as_deref(), Some("done"));

    // A stale leader: its key is gone. etcdctl exits 0 all the same, and
    // the recipe must see FAILURE and say so.
    etcd.delete("/jobs/nightly/result");
    let mut stale = Command::new("/bin/sh");
    stale
        .arg(&recipe)
        .env_clear()
        .env("PATH", &path)
        .env("ETCDCTL_ENDPOINTS", &endpoint)
        .env("LEADERRUN_KEY", "jobs/nightly/694d9a5bc1f21a0b")
        .env("LEADERRUN_TOKEN", "5")
        .stdin(Stdio::null());
    let done = run_within(&mut stale, Duration::from_secs(60));
    assert_eq!(done.code, Some(1), "{}{}", done.stdout, done.stderr);
    assert!(
        done.stderr.contains("not written: a newer leader exists"),
        "{}",
        done.stderr
    );
    assert_eq!(etcd.get("/jobs/nightly/result"), None);
}

/// A dead-man's switch played by an HTTP server on a free loopback port:
/// it answers every request "200 OK", as healthchecks.io does, and keeps
/// each one's path.
struct Switch {
    url: String,
    pings: Arc<Mutex<Vec<String>>>,
}

impl Switch {
    fn start() -> Switch {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let pings = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&pings);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(&stream);
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|read| read > 2) {
                    header.clear();
                }
                if let Some(path) = request.split_whitespace().nth(1) {
                    kept.lock().unwrap().push(path.to_string());
                }
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK",
                );
            }
        });
        Switch { url, pings }
    }

    fn pings(&self) -> Vec<String> {
        self.pings.lock().unwrap().clone()
    }
}

/// The curl recipe of README's "Did it run?", fired by three replicas at
/// once: the replica that runs pings with its command's exit code and
/// exits with it; the two that do not run (75) ping nothing; a second
/// firing in the same --once-per window pings nothing either.
#[test]
fn the_ping_recipe_pings_once_per_window_from_the_replica_that_ran() {
    let etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let switch = Switch::start();
    let block = readme_block("ping");
    let (_, recipe) = block
        .split_once("# Or with curl")
        .expect("the curl recipe, after the runitor one");
    let recipe = recipe.split_once('\n').unwrap().1;
    assert!(
        recipe.contains("https://hc-ping.com/$HC_UUID/$code"),
        "{recipe}"
    );
    let dir = tempfile::tempdir().unwrap();
    let variables = [
        ("LEADERRUN_ENDPOINTS", endpoint.as_str()),
        ("HC_UUID", "check-1"),
    ];
    // Three replicas fire `name`'s recipe at once, over a batch that takes
    // a second and exits `code`: their exit codes, in order.
    let fire = |name: &str, code: i32| -> Vec<Option<i32>> {
        let batch = dir.path().join(format!("nightly-{code}"));
        std::fs::write(&batch, format!("#!/bin/sh\nsleep 1\nexit {code}\n")).unwrap();
        std::fs::set_permissions(&batch, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let script = recipe
            .replace("jobs/nightly", name)
            .replace("/usr/local/bin/nightly", &batch.display().to_string())
            .replace("https://hc-ping.com", &switch.url);
        let mut replicas: Vec<Replica> = (0..3)
            .map(|_| Replica::spawn(&mut script_command(dir.path(), &script, &variables)))
            .collect();
        finish_all(&mut replicas, LIMIT)
    };

    assert_eq!(fire("jobs/pinged", 0), [Some(0), Some(75), Some(75)]);
    assert_eq!(switch.pings(), ["/check-1/0"]);
    assert_eq!(fire("jobs/pinged", 0), [Some(75), Some(75), Some(75)]);
    assert_eq!(switch.pings(), ["/check-1/0"], "the window had its run");
    assert_eq!(fire("jobs/failing", 3), [Some(3), Some(75), Some(75)]);
    assert_eq!(switch.pings(), ["/check-1/0", "/check-1/3"]);
}
