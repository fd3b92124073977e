//! The release artifacts (`scripts/release`, which `scripts/test` runs and
//! names in LEADERRUN_TEST_RELEASE), for x86_64 and for aarch64: each
//! portable binary's glibc floor and libraries, each tarball's layout, each
//! .rpm's files, metadata and dependencies and its install into a scratch
//! root, each .deb's architecture and dependency, the checksums, and smoke
//! runs against a real etcd: the x86_64 binary named by host name, the
//! aarch64 one under qemu (`qemu-aarch64-static`, with the arm64 glibc that
//! scripts/arm64-toolchain unpacked, named in LEADERRUN_TEST_ARM64_SYSROOT):
//! a run, a conflict, `status`, and a revoke that stops its command.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The oldest glibc Rust supports, and the one the portable binary is
/// linked against.
const GLIBC_FLOOR: (u32, u32) = (2, 17);

/// The shared libraries a portable binary may need: glibc's own, the
/// loader (its architecture's: [`Arch::loader`]), and libgcc_s. Nothing a
/// minimal system lacks.
const ALLOWED_LIBRARIES: [&str; 6] = [
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libgcc_s.so.1",
];

/// An architecture the release is built for.
#[derive(Debug, Clone, Copy)]
struct Arch {
    /// The kernel's and rpm's name, in the tarball's and the .rpm's.
    name: &'static str,
    /// Debian's name, in the .deb's.
    deb: &'static str,
    /// Its dynamic loader.
    loader: &'static str,
}

const X86_64: Arch = Arch {
    name: "x86_64",
    deb: "amd64",
    loader: "ld-linux-x86-64.so.2",
};

const AARCH64: Arch = Arch {
    name: "aarch64",
    deb: "arm64",
    loader: "ld-linux-aarch64.so.1",
};

const ARCHES: [Arch; 2] = [X86_64, AARCH64];

impl Arch {
    fn allows(self, library: &str) -> bool {
        ALLOWED_LIBRARIES.contains(&library) || library == self.loader
    }

    /// A command that runs `binary` of this architecture here: itself,
    /// or under qemu.
    fn run(self, binary: &Path) -> Command {
        if self.name == X86_64.name {
            return Command::new(binary);
        }
        let sysroot = std::env::var_os("LEADERRUN_TEST_ARM64_SYSROOT").unwrap_or_else(|| {
            panic!(
                "LEADERRUN_TEST_ARM64_SYSROOT is not set: scripts/test sets it to the arm64 glibc \
                 that scripts/arm64-toolchain unpacked (by hand: $(scripts/arm64-toolchain)/sysroot)"
            )
        });
        let mut command = Command::new("qemu-aarch64-static");
        command.arg("-L").arg(sysroot).arg(binary);
        command
    }
}

/// The folder of artifacts this suite checks. Without it there is nothing
/// to test, and saying so is a failure, not a pass.
fn artifacts() -> PathBuf {
    let dir = std::env::var_os("LEADERRUN_TEST_RELEASE").unwrap_or_else(|| {
        panic!(
            "LEADERRUN_TEST_RELEASE is not set: scripts/test runs scripts/release and sets it \
             (by hand: LEADERRUN_TEST_RELEASE=$(scripts/release))"
        )
    });
    PathBuf::from(dir)
}

fn name(arch: Arch) -> String {
    format!("leaderrun-{VERSION}-{}-linux", arch.name)
}

fn output(command: &mut Command) -> String {
    let output = command.output().expect("runs");
    assert!(output.status.success(), "{command:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The tarball of `arch` unpacked into a fresh folder, and the binary in it.
fn unpacked(arch: Arch) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tarball = artifacts().join(format!("{}.tar.gz", name(arch)));
    output(
        Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(dir.path()),
    );
    let binary = dir.path().join(name(arch)).join("leaderrun");
    (dir, binary)
}

/// The newest `GLIBC_x.y` symbol version `binary` asks for.
fn newest_glibc(binary: &Path) -> (u32, u32) {
    let symbols = output(Command::new("objdump").arg("-T").arg(binary));
    symbols
        .split("GLIBC_")
        .skip(1)
        .filter_map(|rest| {
            let version: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
            Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
        })
        .max()
        .expect("a binary linked against glibc names its versions")
}

#[test]
fn the_portable_binaries_need_glibc_2_17_and_no_other_library() {
    for arch in ARCHES {
        let (_dir, binary) = unpacked(arch);
        let newest = newest_glibc(&binary);
        assert!(
            newest <= GLIBC_FLOOR,
            "the {} binary needs glibc {}.{}",
            arch.name,
            newest.0,
            newest.1
        );
        let headers = output(Command::new("objdump").arg("-p").arg(&binary));
        let needed: Vec<&str> = headers
            .lines()
            .filter_map(|line| line.trim().strip_prefix("NEEDED"))
            .map(str::trim)
            .collect();
        let program = output(Command::new("readelf").arg("-lW").arg(&binary));
        assert!(
            program.contains(&format!("interpreter: /lib/{}]", arch.loader))
                || program.contains(&format!("interpreter: /lib64/{}]", arch.loader)),
            "{arch:?}: {program}"
        );
        for library in &needed {
            assert!(
                arch.allows(library),
                "the {} binary needs {library}: {needed:?}",
                arch.name
            );
        }
        let header = output(Command::new("readelf").arg("-h").arg(&binary));
        let machine = match arch.name {
            "x86_64" => "X86-64",
            _ => "AArch64",
        };
        let said = header
            .lines()
            .find(|line| line.trim_start().starts_with("Machine:"))
            .unwrap_or_default();
        assert!(said.contains(machine), "{arch:?}: {header}");
    }
    // The development build, by contrast, is this machine's: the check
    // above can fail.
    let here = newest_glibc(Path::new(env!("CARGO_BIN_EXE_leaderrun")));
    eprintln!("development build: glibc {}.{}", here.0, here.1);
}

#[test]
fn the_tarballs_hold_one_folder_with_the_binary_and_its_documents() {
    for arch in ARCHES {
        a_tarball_holds_one_folder_with_the_binary_and_its_documents(arch);
    }
}

fn a_tarball_holds_one_folder_with_the_binary_and_its_documents(arch: Arch) {
    let tarball = artifacts().join(format!("{}.tar.gz", name(arch)));
    let listing = output(Command::new("tar").arg("-tzf").arg(&tarball));
    let mut entries: Vec<&str> = listing.lines().map(|l| l.trim_end_matches('/')).collect();
    entries.sort_unstable();
    let top = name(arch);
    let mut expected: Vec<String> = [
        "",
        "/leaderrun",
        "/README.md",
        "/CHANGELOG.md",
        "/LICENSE-MIT",
        "/LICENSE-APACHE",
        "/man",
        "/man/leaderrun.1",
        "/man/leaderrun-status.1",
        "/man/leaderrun-check.1",
        "/completions",
    ]
    .iter()
    .map(|path| format!("{top}{path}"))
    .collect();
    expected.push(format!("{top}/docs"));
    for folder in ["completions", "docs"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
        for file in std::fs::read_dir(dir).unwrap() {
            let file = file.unwrap().file_name();
            expected.push(format!("{top}/{folder}/{}", file.to_string_lossy()));
        }
    }
    expected.sort_unstable();
    assert_eq!(entries, expected);
    let verbose = output(Command::new("tar").arg("-tvzf").arg(&tarball));
    let binary_line = verbose
        .lines()
        .find(|line| line.ends_with(&format!("{top}/leaderrun")))
        .unwrap();
    assert!(binary_line.starts_with("-rwxr-xr-x 0/0 "), "{binary_line}");
}

#[test]
fn version_names_the_version_and_the_commit_it_was_built_from() {
    for arch in ARCHES {
        a_version_names_the_version_and_the_commit(arch);
    }
}

fn a_version_names_the_version_and_the_commit(arch: Arch) {
    let (_dir, binary) = unpacked(arch);
    let said = output(arch.run(&binary).arg("--version"));
    let prefix = format!("leaderrun {VERSION} (commit ");
    assert!(
        said.starts_with(&prefix) && said.ends_with(")\n"),
        "{said:?}"
    );
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|head| head.status.success());
    if let Some(head) = head {
        let head = String::from_utf8(head.stdout).unwrap();
        assert!(
            said[prefix.len()..].starts_with(head.trim()),
            "{said:?} at {head}"
        );
    }
    // -V, as the man pages, says the version alone.
    let short = output(arch.run(&binary).arg("-V"));
    assert_eq!(short, format!("leaderrun {VERSION}\n"));
}

fn rpm_file(arch: Arch) -> PathBuf {
    artifacts().join(format!("leaderrun-{VERSION}-1.{}.rpm", arch.name))
}

#[test]
fn the_rpms_put_their_files_where_rhel_and_fedora_look() {
    for arch in ARCHES {
        an_rpm_puts_its_files_where_rhel_and_fedora_look(arch);
    }
}

fn an_rpm_puts_its_files_where_rhel_and_fedora_look(arch: Arch) {
    let rpm = rpm_file(arch);
    let listing = output(Command::new("rpm").arg("-qpl").arg(&rpm));
    let mut files: Vec<&str> = listing
        .lines()
        .filter(|file| !file.starts_with("/usr/share/doc/leaderrun/docs"))
        .collect();
    files.sort_unstable();
    // README's links lead into docs/, shipped beside it.
    for doc in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/docs")).unwrap() {
        let doc = doc.unwrap().file_name();
        let path = format!("/usr/share/doc/leaderrun/docs/{}", doc.to_string_lossy());
        assert!(
            listing.lines().any(|file| file == path),
            "{path}:\n{listing}"
        );
    }
    assert_eq!(
        files,
        [
            "/usr/bin/leaderrun",
            "/usr/share/bash-completion/completions/leaderrun",
            "/usr/share/doc/leaderrun/CHANGELOG.md",
            "/usr/share/doc/leaderrun/README.md",
            "/usr/share/fish/vendor_completions.d/leaderrun.fish",
            "/usr/share/licenses/leaderrun/LICENSE-APACHE",
            "/usr/share/licenses/leaderrun/LICENSE-MIT",
            "/usr/share/man/man1/leaderrun-check.1.gz",
            "/usr/share/man/man1/leaderrun-status.1.gz",
            "/usr/share/man/man1/leaderrun.1.gz",
            "/usr/share/zsh/site-functions/_leaderrun",
        ]
    );
    let metadata = output(Command::new("rpm").arg("-qp").arg(&rpm).args([
        "--queryformat",
        "%{NAME} %{VERSION} %{RELEASE} %{ARCH} %{LICENSE}",
    ]));
    assert_eq!(
        metadata,
        format!("leaderrun {VERSION} 1 {} MIT OR Apache-2.0", arch.name)
    );
    // What it requires: glibc's libraries at versions up to the floor,
    // and rpm's own features; nothing else.
    let requires = output(Command::new("rpm").arg("-qpR").arg(&rpm));
    for requirement in requires.lines() {
        let library = requirement.split('(').next().unwrap().trim();
        assert!(
            requirement.starts_with("rpmlib(")
                || requirement.starts_with("rtld(")
                || arch.allows(library),
            "the rpm requires {requirement}:\n{requires}"
        );
        if let Some(version) = requirement.split("GLIBC_").nth(1) {
            let version = version.trim_end_matches(")(64bit)");
            let mut parts = version.split('.').map(|part| part.parse::<u32>().unwrap());
            let found = (parts.next().unwrap(), parts.next().unwrap_or(0));
            assert!(found <= GLIBC_FLOOR, "the rpm requires {requirement}");
        }
    }
}

#[test]
fn the_rpms_install_into_a_scratch_root_and_run_from_there() {
    for arch in ARCHES {
        an_rpm_installs_into_a_scratch_root_and_runs_from_there(arch);
    }
}

fn an_rpm_installs_into_a_scratch_root_and_runs_from_there(arch: Arch) {
    let root = tempfile::tempdir().unwrap();
    output(
        Command::new("rpm")
            .arg("--root")
            .arg(root.path())
            .arg("--initdb"),
    );
    output(
        Command::new("rpm")
            .arg("--root")
            .arg(root.path())
            .args(["--nodeps", "--ignorearch", "-i"])
            .arg(rpm_file(arch)),
    );
    let binary = root.path().join("usr/bin/leaderrun");
    let said = output(arch.run(&binary).arg("--version"));
    assert!(
        said.starts_with(&format!("leaderrun {VERSION} (commit ")),
        "{said}"
    );
    let installed = output(
        Command::new("rpm")
            .arg("--root")
            .arg(root.path())
            .args(["-q", "leaderrun"]),
    );
    assert_eq!(
        installed.trim(),
        format!("leaderrun-{VERSION}-1.{}", arch.name)
    );
}

#[test]
fn each_deb_is_of_its_architecture_and_depends_on_the_glibc_floor() {
    for arch in ARCHES {
        let deb = artifacts().join(format!("leaderrun_{VERSION}_{}.deb", arch.deb));
        let field = |name: &str| {
            output(Command::new("dpkg-deb").arg("--field").arg(&deb).arg(name))
                .trim_end()
                .to_owned()
        };
        assert_eq!(field("Depends"), "libc6 (>= 2.17)", "{arch:?}");
        assert_eq!(field("Architecture"), arch.deb);
        assert_eq!(field("Version"), VERSION);
        let listing = output(Command::new("dpkg-deb").arg("--contents").arg(&deb));
        assert!(
            listing
                .lines()
                .any(|line| line.ends_with("./usr/bin/leaderrun")),
            "{listing}"
        );
        // The binary in it is the tarball's.
        let extracted = tempfile::tempdir().unwrap();
        output(
            Command::new("dpkg-deb")
                .arg("-x")
                .arg(&deb)
                .arg(extracted.path()),
        );
        let (_dir, binary) = unpacked(arch);
        let packaged = std::fs::read(extracted.path().join("usr/bin/leaderrun")).unwrap();
        assert!(packaged == std::fs::read(&binary).unwrap(), "{arch:?}");
    }
}

#[test]
fn the_checksums_cover_every_artifact() {
    let dir = artifacts();
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    let mut named: Vec<&str> = sums
        .lines()
        .map(|line| line.split_whitespace().nth(1).unwrap())
        .collect();
    named.sort_unstable();
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|file| file != "SHA256SUMS")
        .collect();
    present.sort_unstable();
    assert_eq!(named, present);
    assert_eq!(
        named.len(),
        6,
        "tarball, .deb and .rpm of each architecture: {named:?}"
    );
    output(
        Command::new("sha256sum")
            .args(["--check", "--quiet", "SHA256SUMS"])
            .current_dir(&dir),
    );
}

/// The portable binary against a real etcd named by host name: a run with
/// its token, a conflict, and `status`. getaddrinfo goes through glibc's
/// NSS modules, which a binary linked for another glibc must still load.
#[test]
fn the_portable_binary_runs_against_etcd_by_host_name() {
    let (_dir, binary) = unpacked(X86_64);
    let etcd = Etcd::start();
    let endpoint = format!("http://localhost:{}", etcd.client_port());
    let ran = run_within(
        leaderrun_at(&binary, &endpoint).args([
            "--name",
            "jobs/portable",
            "--",
            "sh",
            "-c",
            "echo token=$LEADERRUN_TOKEN",
        ]),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stdout.starts_with("token="), "{}", ran.stdout);

    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("go");
    let mut holder = Replica::spawn(leaderrun_at(&binary, &endpoint).args([
        "--name",
        "jobs/portable",
        "--",
        "sh",
        "-c",
        &until_exists(&flag),
    ]));
    await_condition(LIMIT, "a leader", || {
        etcd.candidates("jobs/portable").len() == 1
    });
    let conflict = run_within(
        leaderrun_at(&binary, &endpoint).args(["--name", "jobs/portable", "--", "true"]),
        LIMIT,
    );
    assert_eq!(conflict.code, Some(75), "{}", conflict.stderr);
    let status = run_within(
        leaderrun_at(&binary, &endpoint).args(["status", "--name", "jobs/portable", "--json"]),
        LIMIT,
    );
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    let shown: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(shown["holder"]["pid"], holder.pid(), "{shown}");
    std::fs::write(&flag, "").unwrap();
    let (code, stderr) = holder.finish(LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
}

/// The aarch64 binary, under qemu, against a real etcd: a run with its
/// token and its exit code passed through, a conflict, `status`, and a
/// revoked lease that stops its command (124). The commands it starts are
/// this machine's, run natively.
#[test]
fn the_aarch64_binary_runs_against_etcd_under_qemu() {
    let (_dir, binary) = unpacked(AARCH64);
    let etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let arm = |args: &[&str]| {
        let mut command = AARCH64.run(&binary);
        leaderrun_env(&mut command, &endpoint).args(args);
        command
    };
    let ran = run_within(
        &mut arm(&[
            "--name",
            "jobs/arm",
            "--",
            "sh",
            "-c",
            "echo token=$LEADERRUN_TOKEN; exit 3",
        ]),
        LIMIT,
    );
    assert_eq!(ran.code, Some(3), "{}", ran.stderr);
    assert!(ran.stdout.starts_with("token="), "{}", ran.stdout);

    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let job = pid_job(&pidfile);
    let mut args = vec!["--name", "jobs/arm", "--"];
    args.extend(job.iter().map(String::as_str));
    let mut holder = Replica::spawn(&mut arm(&args));
    read_pid(&pidfile, LIMIT);
    let conflict = run_within(&mut arm(&["--name", "jobs/arm", "--", "true"]), LIMIT);
    assert_eq!(conflict.code, Some(75), "{}", conflict.stderr);
    let status = run_within(&mut arm(&["status", "--name", "jobs/arm", "--json"]), LIMIT);
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    let shown: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(shown["holder"]["pid"], holder.pid(), "{shown}");
    let (_, _, lease) = etcd.candidates("jobs/arm")[0].clone();
    etcd.revoke(lease);
    let (code, stderr) = holder.finish(LIMIT);
    assert_eq!(code, Some(124), "{stderr}");
    assert!(stderr.contains("leadership of jobs/arm lost"), "{stderr}");
}
