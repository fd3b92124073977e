//! The man page, the completions and the README's usage are generated from
//! the clap definition; this fails when a checked-in copy differs.
//! `LEADERRUN_UPDATE_DOCS=1 cargo test --test docs` rewrites them.

use std::path::Path;
use std::process::Command;

fn generate(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_leaderrun"))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("leaderrun runs");
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

fn check(path: &Path, expected: &str, stale: &mut Vec<String>) {
    let current = std::fs::read_to_string(path).unwrap_or_default();
    if current == expected {
        return;
    }
    if std::env::var_os("LEADERRUN_UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, expected).unwrap();
    } else {
        stale.push(path.display().to_string());
    }
}

const HELP_START: &str = "<!-- leaderrun --help: start -->\n```text\n";
const HELP_END: &str = "```\n<!-- leaderrun --help: end -->";

/// `text` with what lies between the markers `start` and `end` replaced.
fn replace_between(text: &str, start: &str, end: &str, with: &str) -> String {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("README has no {start:?}"))
        + start.len();
    let to = text[from..]
        .find(end)
        .unwrap_or_else(|| panic!("README has no {end:?}"))
        + from;
    format!("{}{with}{}", &text[..from], &text[to..])
}

#[test]
fn generated_docs_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    check(
        &root.join("man/leaderrun.1"),
        &generate(&["--manual"]),
        &mut stale,
    );
    check(
        &root.join("man/leaderrun-status.1"),
        &generate(&["--manual", "status"]),
        &mut stale,
    );
    for (shell, file) in [
        ("bash", "leaderrun.bash"),
        ("zsh", "_leaderrun"),
        ("fish", "leaderrun.fish"),
        ("elvish", "leaderrun.elv"),
        ("powershell", "_leaderrun.ps1"),
    ] {
        check(
            &root.join("completions").join(file),
            &generate(&["--completions", shell]),
            &mut stale,
        );
    }

    let readme_path = root.join("README.md");
    let mut readme = std::fs::read_to_string(&readme_path).expect("README.md");
    for (start, end, args) in [
        (HELP_START, HELP_END, &["--help"][..]),
        (
            "<!-- exit codes: start -->\n",
            "<!-- exit codes: end -->",
            &["--manual", "exit-codes"][..],
        ),
        (
            "<!-- environment: start -->\n",
            "<!-- environment: end -->",
            &["--manual", "environment"][..],
        ),
    ] {
        readme = replace_between(&readme, start, end, &generate(args));
    }
    check(&readme_path, &readme, &mut stale);

    assert!(
        stale.is_empty(),
        "out of date with --help: {stale:?}; run `LEADERRUN_UPDATE_DOCS=1 cargo test --test docs`"
    );
}

/// Every page a man page refers to in the form `leaderrun-X(1)` is one
/// this repository ships.
#[test]
fn man_pages_refer_only_to_pages_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for page in [generate(&["--manual"]), generate(&["--manual", "status"])] {
        let text = page.replace("\\-", "-");
        for (at, _) in text.match_indices("leaderrun-") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if text[at + name.len()..].starts_with("(1)") {
                assert!(
                    root.join("man").join(format!("{name}.1")).exists(),
                    "refers to {name}(1), which man/ does not have"
                );
            }
        }
    }
}

#[test]
fn status_has_a_man_page_with_its_output() {
    let man = generate(&["--manual", "status"]);
    for needle in [
        "--json",
        "--watch",
        "--max-age",
        "window_left",
        "last_succeeded",
        "\"NAME: no leader\"",
    ] {
        assert!(
            man.replace("\\-", "-").contains(needle),
            "leaderrun-status(1) does not document {needle}"
        );
    }
}

#[test]
fn man_page_has_the_sections_people_look_for() {
    let man = generate(&["--manual"]);
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "EXAMPLES",
        "FENCING",
    ] {
        assert!(
            man.contains(&format!(".SH {section}")) || man.contains(&format!(".SH \"{section}\"")),
            "missing {section}"
        );
    }
}

/// The man pages follow man-page conventions: the sections in their usual
/// order, every option under OPTIONS (a subsection per group), the real
/// synopsis forms, no literal markdown, no hyphenation (which broke option
/// names across lines), and the safe crontab line (with --once-per) as
/// the first example.
#[test]
fn the_man_pages_follow_man_page_conventions() {
    for (args, first_example, sections) in [
        (
            &["--manual"][..],
            Some("--once-per 1h -- /usr/local/bin/nightly-batch"),
            &[
                "NAME",
                "SYNOPSIS",
                "DESCRIPTION",
                "OPTIONS",
                "SUBCOMMANDS",
                "EXIT STATUS",
                "ENVIRONMENT",
                "\"THE COMMAND'S ENVIRONMENT\"",
                "FENCING",
                "EXAMPLES",
                "\"SEE ALSO\"",
                "VERSION",
            ][..],
        ),
        (
            &["--manual", "status"][..],
            None,
            &[
                "NAME",
                "SYNOPSIS",
                "DESCRIPTION",
                "OPTIONS",
                "\"WHAT IT PRINTS\"",
                "\"RUN RECORDS\"",
                "\"EXIT STATUS\"",
                "EXAMPLES",
                "\"SEE ALSO\"",
                "VERSION",
            ][..],
        ),
    ] {
        let page = generate(args);
        let found: Vec<&str> = page
            .lines()
            .filter_map(|line| line.strip_prefix(".SH "))
            .collect();
        let expected: Vec<&str> = sections
            .iter()
            .map(|section| section.trim_start_matches('"').trim_end_matches('"'))
            .collect();
        let found: Vec<&str> = found.iter().map(|s| s.trim_matches('"')).collect();
        assert_eq!(found, expected, "{args:?}");
        assert!(page.contains("\n.nh\n"), "{args:?}: hyphenation is on");
        // --version names the commit; the checked-in page must not.
        let version = page.split(".SH VERSION").nth(1).unwrap();
        assert_eq!(version.trim(), format!("v{}", env!("CARGO_PKG_VERSION")));
        assert!(!page.contains('`'), "{args:?}: literal markdown");
        assert!(page.contains("\n.SS "), "{args:?}: no option groups");
        let synopsis = page.split(".SH SYNOPSIS").nth(1).unwrap();
        let synopsis = synopsis.split(".SH ").next().unwrap();
        assert!(
            synopsis.contains("[\\-\\-]") || args.len() == 2,
            "{synopsis}"
        );
        assert!(synopsis.contains("\\-\\- COMMAND"), "{synopsis}");
        if let Some(first) = first_example {
            let examples = page.split(".SH EXAMPLES").nth(1).unwrap();
            let command = examples
                .lines()
                .find(|line| line.starts_with("0 0 * * *"))
                .unwrap_or_default()
                .replace("\\-", "-");
            assert!(command.contains(first), "{examples}");
        }
    }
    // status takes no -V: its page must not offer it.
    let status = generate(&["--manual", "status"]);
    assert!(
        !status.contains("\\-\\-version"),
        "status(1) offers --version"
    );
}
