//! The man pages, the completions and README's exit status and environment
//! tables are generated from the clap definition and the program's tables;
//! this fails when a checked-in copy differs.
//! `LEADERRUN_UPDATE_DOCS=1 cargo test --test docs` rewrites them. It also
//! fails on a relative link or `#anchor` in the Markdown documents that
//! leads nowhere.

// A scenario reads top to bottom: the 60-line rule is src/'s.
#![allow(clippy::too_many_lines)]

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
    check(
        &root.join("man/leaderrun-check.1"),
        &generate(&["--manual", "check"]),
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
        "out of date with the program: {stale:?}; run `LEADERRUN_UPDATE_DOCS=1 cargo test --test docs`"
    );
}

/// Every page a man page refers to in the form `leaderrun-X(1)` is one
/// this repository ships.
#[test]
fn man_pages_refer_only_to_pages_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for page in [
        generate(&["--manual"]),
        generate(&["--manual", "status"]),
        generate(&["--manual", "check"]),
    ] {
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

/// The Markdown documents whose links are checked: README.md,
/// CONTRIBUTING.md and every file in docs/.
fn markdown_documents(root: &Path) -> Vec<std::path::PathBuf> {
    let mut documents = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    let mut in_docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    in_docs.sort();
    documents.extend(in_docs);
    documents
}

/// `text` with the lines of its fenced code blocks emptied: no heading
/// and no link is in them.
fn without_fences(text: &str) -> String {
    let mut lines = Vec::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(marker)) => {
                fence = Some(marker);
                lines.push("");
            }
            (Some(open), Some(marker)) if open == marker => {
                fence = None;
                lines.push("");
            }
            (Some(_), _) => lines.push(""),
            (None, None) => lines.push(line),
        }
    }
    lines.join("\n")
}

/// `text` without its fenced code blocks and its code spans (a run of n
/// backticks up to the next run of exactly n), where no link can be.
fn prose(text: &str) -> String {
    let text = without_fences(text);
    let chars: Vec<char> = text.chars().collect();
    let run_at = |at: usize| chars[at..].iter().take_while(|&&c| c == '`').count();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] != '`' {
            out.push(chars[at]);
            at += 1;
            continue;
        }
        let n = run_at(at);
        let mut close = at + n;
        let end = loop {
            match chars[close..].iter().position(|&c| c == '`') {
                None => break None,
                Some(offset) => {
                    let found = close + offset;
                    let m = run_at(found);
                    if m == n {
                        break Some(found + m);
                    }
                    close = found + m;
                }
            }
        };
        match end {
            // Keep the span's newlines, so that line numbers still count.
            Some(end) => {
                out.extend(chars[at..end].iter().filter(|&&c| c == '\n'));
                at = end;
            }
            None => {
                out.extend(&chars[at..at + n]);
                at += n;
            }
        }
    }
    out
}

/// The anchors GitHub gives the headings of `text`: the heading's text,
/// lower-case, with every character but letters, digits, spaces, `-` and
/// `_` dropped and each space made `-`; a repeated one gets `-1`, `-2`...
fn anchors(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut anchors = Vec::new();
    for line in without_fences(text).lines() {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let mut heading = line[hashes..]
            .trim()
            .trim_end_matches('#')
            .trim()
            .to_string();
        // A link in a heading shows its text only.
        while let (Some(open), Some(middle)) = (heading.find('['), heading.find("](")) {
            let Some(close) = heading[middle..].find(')').map(|at| at + middle) else {
                break;
            };
            if open > middle {
                break;
            }
            heading = format!(
                "{}{}{}",
                &heading[..open],
                &heading[open + 1..middle],
                &heading[close + 1..]
            );
        }
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|&c| c.is_alphanumeric() || c == ' ' || c == '-' || c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let count = seen.entry(slug.clone()).or_insert(0);
        anchors.push(if *count == 0 {
            slug
        } else {
            format!("{slug}-{count}")
        });
        *count += 1;
    }
    anchors
}

/// Every inline link's target in `text`, with the line it is on.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let text = prose(text);
    let mut targets = Vec::new();
    for (at, _) in text.match_indices("](") {
        let rest = &text[at + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        let line = text[..at].matches('\n').count() + 1;
        targets.push((line, target.to_string()));
    }
    targets
}

/// What is wrong with every relative link and anchor in `documents`: a
/// file that does not exist, or an anchor that no heading of its file has.
fn broken_links(documents: &[std::path::PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for document in documents {
        let text = std::fs::read_to_string(document)
            .unwrap_or_else(|error| panic!("{}: {error}", document.display()));
        for (line, target) in link_targets(&text) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                document.clone()
            } else {
                document.parent().unwrap().join(file)
            };
            let at = format!("{}:{line}: {target}", document.display());
            if !path.exists() {
                broken.push(format!("{at}: no file {}", path.display()));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            let headings = std::fs::read_to_string(&path).unwrap_or_default();
            if !anchors(&headings).iter().any(|known| known == anchor) {
                broken.push(format!("{at}: no heading with the anchor #{anchor}"));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_in_the_documents_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let documents = markdown_documents(root);
    assert!(documents.iter().all(|document| document.exists()));
    let broken = broken_links(&documents);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The link check itself: GitHub's anchors, and links that lead nowhere.
#[test]
fn the_link_check_finds_broken_links() {
    assert_eq!(
        anchors(
            "# What leaderrun guarantees, and what it cannot\n## Did it run?\n\
             ```\n# not a heading\n```\n## Choosing a `--once-per` window\n\
             ## Notes\n## Notes\n## Notes\n### [etcd](https://etcd.io) permissions\n\
             ## snake_case & co.\n"
        ),
        [
            "what-leaderrun-guarantees-and-what-it-cannot",
            "did-it-run",
            "choosing-a---once-per-window",
            "notes",
            "notes-1",
            "notes-2",
            "etcd-permissions",
            "snake_case--co",
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    let readme = dir.path().join("README.md");
    let page = dir.path().join("docs/page.md");
    std::fs::write(&page, "# A page\n## Its part\n").unwrap();
    std::fs::write(
        &readme,
        "# Top\nSee [it](docs/page.md#its-part), [top](#top), [web](https://example.com/x#y),\n\
         `[code](nowhere.md)` and\n```\n[fenced](nowhere.md)\n```\n",
    )
    .unwrap();
    let documents = [readme.clone(), page.clone()];
    assert_eq!(broken_links(&documents), Vec::<String>::new());

    std::fs::write(
        &readme,
        "# Top\n[gone](docs/gone.md), [no part](docs/page.md#no-part), [here](#bottom),\n\
         [wrapped\nlink](#nor-this)\n",
    )
    .unwrap();
    let broken = broken_links(&documents);
    assert_eq!(broken.len(), 4, "{broken:#?}");
    assert!(
        broken[0].contains(":2: docs/gone.md: no file "),
        "{broken:#?}"
    );
    assert!(
        broken[1].contains(":2: docs/page.md#no-part: no heading with the anchor #no-part"),
        "{broken:#?}"
    );
    assert!(broken[2].contains(":2: #bottom: no heading"), "{broken:#?}");
    assert!(
        broken[3].contains(":4: #nor-this: no heading"),
        "{broken:#?}"
    );
}

/// `--help`'s first example is the crontab line with --once-per, whole on
/// one line (a wrapped crontab line does not paste).
#[test]
fn the_help_shows_the_safe_crontab_line_first_and_whole() {
    let help = generate(&["--help"]);
    let examples = help.split("Examples:").nth(1).expect("an Examples section");
    let first = examples
        .lines()
        .find(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .unwrap();
    assert!(first.trim_start().starts_with("0 0 * * *"), "{first}");
    assert!(
        first.ends_with("--once-per 1h -- /usr/local/bin/nightly-batch"),
        "{first}"
    );
}

/// README is a newcomer's guide: under 20 KB (20,000 bytes), the rest in
/// docs/. A paragraph added there is one moved out, or cut.
#[test]
fn the_readme_stays_under_twenty_kilobytes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let size = std::fs::metadata(root.join("README.md")).unwrap().len();
    assert!(
        size < 20_000,
        "README.md is {size} bytes: move detail to docs/"
    );
}
