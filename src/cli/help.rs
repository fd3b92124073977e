//! The text after `--help` and the tables README shows, made from the tables
//! the rest of the program keeps: exit codes ([`exit::TABLE`]) and the
//! command's environment ([`env::GIVEN`]). So `--help`, the man page and
//! README say the same thing (README's copies are checked by a test).

use crate::child::env;
use crate::exit;

/// Column where a table's text starts in `--help`, and the width it wraps at.
const INDENT: usize = 12;
const WIDTH: usize = 88;

/// Printed after `--help`: the part people look for first.
pub fn after_help() -> String {
    let mut text = String::from("Exit status:\n");
    for row in &exit::TABLE {
        let head = format!("  {:<width$}", row.code, width = INDENT - 2);
        text.push_str(&wrap(&head, row.meaning));
    }
    text.push_str(&wrap("", exit::WHOSE_CODE));
    text.push('\n');
    let names: Vec<&str> = env::GIVEN.iter().map(|(name, _)| *name).collect();
    let given = format!(
        "The command gets {} in its environment (see the man page).",
        names.join(", ")
    );
    text.push_str(&wrap("", &given));
    text.push_str(EXAMPLES);
    text
}

const EXAMPLES: &str = "
Examples:
  # crontab: every replica has this line; one runs the job, at most once per
  # hour-long window even if the replicas' clocks disagree; silent elsewhere
  0 0 * * *  leaderrun --endpoints etcd1:2379 --once-per 1h -- /usr/local/bin/nightly-batch

  # CI: queue behind whoever deploys, give up after 10 minutes
  leaderrun --name deploy/prod --wait --wait-timeout 10m -- ./deploy.sh

  # by hand: see who holds it, then run interactively
  leaderrun status --name deploy/prod
  leaderrun --name deploy/prod -- psql
";

/// `head` then `text`, wrapped at [`WIDTH`]; continuation lines start at
/// the column where `text` did (or at the left edge, without a head).
fn wrap(head: &str, text: &str) -> String {
    let indent = " ".repeat(head.len());
    let mut out = String::new();
    let mut line = head.to_string();
    let mut words_on_line = 0;
    for word in text.split_whitespace() {
        if words_on_line > 0 && line.len() + 1 + word.len() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = indent.clone();
            words_on_line = 0;
        }
        if words_on_line > 0 {
            line.push(' ');
        }
        line.push_str(word);
        words_on_line += 1;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// README's exit status table, in Markdown.
pub fn exit_codes_markdown() -> String {
    let mut text = String::from("| code | meaning |\n|---|---|\n");
    for row in &exit::TABLE {
        text.push_str(&format!("| {} | {} |\n", row.code, row.meaning));
    }
    text
}

/// README's table of what the command gets, in Markdown.
pub fn environment_markdown() -> String {
    let mut text = String::from("| variable | value |\n|---|---|\n");
    for (name, meaning) in &env::GIVEN {
        let names: Vec<String> = name.split(", ").map(|name| format!("`{name}`")).collect();
        // Angle brackets would read as HTML.
        let meaning = meaning.replace('<', "&lt;").replace('>', "&gt;");
        text.push_str(&format!("| {} | {meaning} |\n", names.join(", ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_keep_their_column_and_width() {
        let text = wrap("  75        ", &"word ".repeat(40));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines[0].starts_with("  75        word"));
        for line in &lines[1..] {
            assert!(line.starts_with("            word"), "{line:?}");
        }
        assert!(lines.iter().all(|line| line.len() <= WIDTH));
    }
}
