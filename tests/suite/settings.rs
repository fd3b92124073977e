//! Secrets out of the crontab: the settings file (`--config`,
//! `LEADERRUN_CONFIG`, the system's), the password file
//! (`--password-file`, its variable, systemd's credential), each setting's
//! precedence (option, environment, file, default), and the files refused:
//! loose permissions, a FIFO, a device.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// `text` in `dir/name`, with `mode`.
fn file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// leaderrun with none of the harness's endpoints: the settings file's.
fn unconfigured() -> std::process::Command {
    let mut command = leaderrun("unused");
    command.env_remove("LEADERRUN_ENDPOINTS");
    command
}

#[test]
fn a_settings_file_holds_the_crontabs_settings_below_options_and_variables() {
    let etcd = Etcd::shared();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "# the site's etcd\nETCDCTL_ENDPOINTS={}\nexport LEADERRUN_TTL=\"7s\"\nLEADERRUN_LOG_FORMAT=json\n",
        etcd.endpoint()
    );
    let config = file(dir.path(), "leaderrun.conf", &text, 0o600);
    let name = unique("jobs/configured");
    let done = run_within(
        unconfigured()
            .arg("--config")
            .arg(&config)
            .args(["--name", &name, "--", "true"]),
        SOON,
    );
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let checked = run_within(
        unconfigured()
            .env("LEADERRUN_CONFIG", &config)
            .args(["check", "--name", &name]),
        SOON,
    );
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    let shown = config.display();
    for line in [
        format!("endpoints     {} ({shown}:2)", etcd.endpoint()),
        format!("ttl           7s ({shown}:3)"),
        format!("settings-file {shown}"),
    ] {
        assert!(
            checked.stdout.contains(&line),
            "{line:?} in {}",
            checked.stdout
        );
    }
    // The environment comes before the file, an option before both.
    let from_env = run_within(
        unconfigured()
            .arg("--config")
            .arg(&config)
            .env("ETCDCTL_ENDPOINTS", "127.0.0.1:1")
            .args(["--", "true"]),
        SOON,
    );
    assert_eq!(from_env.code, Some(125), "{}", from_env.stderr);
    assert!(
        from_env.stderr.contains("127.0.0.1:1"),
        "{}",
        from_env.stderr
    );
    // The file chose JSON lines.
    let line: serde_json::Value = serde_json::from_str(from_env.stderr.lines().last().unwrap())
        .unwrap_or_else(|_| panic!("a JSON line: {}", from_env.stderr));
    assert_eq!(line["level"], "ERROR", "{line}");
    let from_option = run_within(
        unconfigured()
            .arg("--config")
            .arg(&config)
            .env("ETCDCTL_ENDPOINTS", "127.0.0.1:1")
            .args([
                "--endpoints",
                &etcd.endpoint(),
                "--name",
                &name,
                "--",
                "true",
            ]),
        SOON,
    );
    assert_eq!(from_option.code, Some(0), "{}", from_option.stderr);
    // Without --config, the system's file (a debug build reads
    // LEADERRUN_TEST_SYSTEM_CONFIG's path for it).
    let system = run_within(
        unconfigured()
            .env("LEADERRUN_TEST_SYSTEM_CONFIG", &config)
            .args(["--name", &name, "--", "true"]),
        SOON,
    );
    assert_eq!(system.code, Some(0), "{}", system.stderr);
    // One that cannot be read (a link to nothing) is said, never taken for
    // no file: the site's endpoints are in it.
    let dangling = dir.path().join("dangling.conf");
    std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).unwrap();
    let unread = run_within(
        unconfigured()
            .env("LEADERRUN_TEST_SYSTEM_CONFIG", &dangling)
            .args(["--", "true"]),
        SOON,
    );
    assert_one_error_line(&unread, "cannot read the settings file", "dangling");
    // Endpoints in the environment come before discovery in the file.
    let discovering = file(
        dir.path(),
        "discovering.conf",
        "ETCDCTL_DISCOVERY_SRV=nothing.test\n",
        0o600,
    );
    let env_first = run_within(
        unconfigured()
            .arg("--config")
            .arg(&discovering)
            .env("ETCDCTL_ENDPOINTS", etcd.endpoint())
            .args(["--name", &name, "--", "true"]),
        SOON,
    );
    assert_eq!(env_first.code, Some(0), "{}", env_first.stderr);
}

/// A settings file others can read, a name it does not know, a name given
/// twice: refused, one line each, before anything is dialled.
#[test]
fn a_settings_file_that_is_loose_or_wrong_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "loose",
            "LEADERRUN_TTL=7s\n",
            0o644,
            "(mode 0644): chmod 600",
        ),
        (
            "typo",
            "LEADERRUN_TTL=7s\nETCDCTL_ENDPOINT=x\n",
            0o600,
            "line 2: ETCDCTL_ENDPOINT is not a setting leaderrun reads",
        ),
        (
            "twice",
            "LEADERRUN_TTL=7s\nLEADERRUN_TTL=8s\n",
            0o600,
            "line 2: LEADERRUN_TTL is set twice",
        ),
        ("bad", "LEADERRUN_TTL=soon\n", 0o600, "LEADERRUN_TTL ("),
    ];
    for (name, text, mode, said) in cases {
        let config = file(dir.path(), name, text, mode);
        let done = run_within(
            unconfigured()
                .arg("--config")
                .arg(&config)
                .args(["--", "true"]),
            SOON,
        );
        assert_one_error_line(&done, said, name);
    }
    let missing = run_within(
        unconfigured().args(["--config", "/nonexistent/leaderrun.conf", "--", "true"]),
        SOON,
    );
    assert_one_error_line(
        &missing,
        "cannot read the settings file /nonexistent/leaderrun.conf",
        "missing",
    );
}

/// Every option that names a file takes a regular file of a bounded size:
/// a FIFO (which would block for ever) and /dev/zero (which would fill
/// memory) are refused at once, in one line that says what they are.
#[test]
fn a_fifo_or_a_device_where_a_file_was_expected_is_refused() {
    let etcd = Etcd::shared();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let fifo = fifo.to_str().unwrap().to_string();
    for (option, path, said) in [
        ("--cacert", fifo.as_str(), "is a FIFO: give a regular file"),
        (
            "--cacert",
            "/dev/zero",
            "is a character device: give a regular file",
        ),
        ("--config", fifo.as_str(), "is a FIFO: give a regular file"),
        (
            "--password-file",
            "/dev/zero",
            "is a character device: give a regular file",
        ),
    ] {
        let mut command = leaderrun(&etcd.endpoint());
        command.args([option, path]);
        if option == "--password-file" {
            command.args(["--user", "root"]);
        }
        let done = run_within(command.args(["--", "true"]), SOON);
        assert_one_error_line(&done, said, &format!("{option} {path}"));
        assert!(done.took < SOON / 2, "{option} {path}: {:?}", done.took);
    }
}

/// The password from a file only its owner reads: --password-file, its
/// variable, or systemd's credential; never on the command line.
#[test]
fn the_password_comes_from_a_private_file() {
    let mut etcd = Etcd::start();
    etcd.enable_auth("root-pw-7");
    let dir = tempfile::tempdir().unwrap();
    let password = file(dir.path(), "password", "root-pw-7\n", 0o600);
    let name = "jobs/secret";
    let run = |command: &mut std::process::Command| {
        run_within(
            command.args(["--user", "root", "--name", name, "--", "true"]),
            SOON,
        )
    };
    let done = run(leaderrun(&etcd.endpoint())
        .arg("--password-file")
        .arg(&password));
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let done = run(leaderrun(&etcd.endpoint()).env("LEADERRUN_PASSWORD_FILE", &password));
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    // systemd's LoadCredential=etcd-password:... puts it here.
    let credentials = tempfile::tempdir().unwrap();
    file(credentials.path(), "etcd-password", "root-pw-7", 0o400);
    let done = run(leaderrun(&etcd.endpoint()).env("CREDENTIALS_DIRECTORY", credentials.path()));
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let checked = run_within(
        leaderrun(&etcd.endpoint())
            .env("CREDENTIALS_DIRECTORY", credentials.path())
            .args(["check", "--user", "root", "--name", name]),
        SOON,
    );
    assert!(
        checked.stdout.contains("password      set (credential "),
        "{}",
        checked.stdout
    );
    assert!(!checked.stdout.contains("root-pw-7"), "{}", checked.stdout);
    // Loose: refused, as ssh refuses a loose key.
    std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o640)).unwrap();
    let loose = run(leaderrun(&etcd.endpoint())
        .arg("--password-file")
        .arg(&password));
    assert_one_error_line(&loose, "(mode 0640): chmod 600", "a loose password file");
}
