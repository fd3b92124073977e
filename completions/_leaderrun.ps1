
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'leaderrun' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'leaderrun'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'leaderrun' {
            [CompletionResult]::new('--endpoints', '--endpoints', [CompletionResultType]::ParameterName, 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails')
            [CompletionResult]::new('--discovery-srv', '--discovery-srv', [CompletionResultType]::ParameterName, 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379')
            [CompletionResult]::new('--discovery-srv-name', '--discovery-srv-name', [CompletionResultType]::ParameterName, 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`')
            [CompletionResult]::new('--insecure-discovery', '--insecure-discovery', [CompletionResultType]::ParameterName, 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both')
            [CompletionResult]::new('--dial-timeout', '--dial-timeout', [CompletionResultType]::ParameterName, 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM), for an etcd that checks client certificates')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) of --cert')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)')
            [CompletionResult]::new('--password', '--password', [CompletionResultType]::ParameterName, 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file')
            [CompletionResult]::new('--password-file', '--password-file', [CompletionResultType]::ParameterName, 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'Lease time to live. etcd may grant a longer one (it raises TTLs below its minimum); the granted TTL is the one used. Renewed every third of it. Shorter means faster takeover after a crash, and less tolerance for a slow etcd')
            [CompletionResult]::new('--wait-timeout', '--wait-timeout', [CompletionResultType]::ParameterName, 'Queue, as --wait, but give up after this long, with the conflict exit code. The queue is always looked at once: `--wait-timeout 0` runs if nobody leads, as `flock -w 0` does')
            [CompletionResult]::new('--once-per', '--once-per', [CompletionResultType]::ParameterName, 'Start at most one run per DURATION, across all replicas: for cron jobs on machines whose clocks disagree. The first leader in a window runs; later leaders exit with the conflict code (-v says when, where and with which token the window''s run started). The window is an etcd lease, so etcd measures it and it ends by itself. Make it shorter than the schedule''s period and longer than the clocks'' skew, e.g. `--once-per 1h` for a nightly job. Replicas that disagree on the window are refused (125), also once a shorter window''s marker has expired, while the last run''s start record names its window')
            [CompletionResult]::new('--once-per-attempts', '--once-per-attempts', [CompletionResultType]::ParameterName, 'With --once-per: only a run that succeeds spends the window, and up to N (1 to 100) runs may start in it, each after the last failed (a non-zero exit, leadership lost, --timeout, a signal). With --wait the replicas queued behind a failed run try in turn; without it, the next firing on any replica tries. 1, the default, is the first run to start spending the window, whatever its end. The run that opens a window sets its N; the window''s marker lists each attempt and how it ended (`status`). One runner at a time: not with --max-running')
            [CompletionResult]::new('--max-running', '--max-running', [CompletionResultType]::ParameterName, 'Run up to N at once: a semaphore. The N replicas first in line run, each with a fencing token of its own; the rest queue (--wait) or exit with the conflict code. Every replica of one name must give the same N: the leader''s N holds, and a replica that gives another is refused (125) before it joins the line')
            [CompletionResult]::new('--conflict-exit-code', '--conflict-exit-code', [CompletionResultType]::ParameterName, 'Exit code when another replica leads or the wait timed out: 0 to 255, but not 123 to 127, which leaderrun gives for other things')
            [CompletionResult]::new('--kill-signal', '--kill-signal', [CompletionResultType]::ParameterName, 'Signal that stops the command''s whole job (its process group and every descendant that left it), then SIGCONT so that a stopped job acts on it')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'Send SIGKILL this long after --kill-signal if the group is still there. On loss of leadership it is shortened so that SIGKILL lands before the lease could expire on the server (the warning says so)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Stop the command if it runs longer than this (--kill-signal, then SIGKILL after --kill-after, in full while the lease is kept alive), and exit 123. Counts from the command''s start: --wait-timeout bounds the queueing')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers')
            [CompletionResult]::new('--manual', '--manual', [CompletionResultType]::ParameterName, 'Print a man page (roff) and exit: leaderrun(1), or with `status`, leaderrun-status(1)')
            [CompletionResult]::new('--completions', '--completions', [CompletionResultType]::ParameterName, 'Print the completion script for SHELL and exit')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Queue for leadership instead of exiting when another replica leads')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Queue for leadership instead of exiting when another replica leads')
            [CompletionResult]::new('--redact-args', '--redact-args', [CompletionResultType]::ParameterName, 'Store only the program''s name in etcd, not its arguments. The command line is kept in the candidate key''s value (and in the --once-per marker), where `status` shows it to anyone who can read the election: use this when an argument is secret')
            [CompletionResult]::new('--pass-notify-socket', '--pass-notify-socket', [CompletionResultType]::ParameterName, 'Give the command NOTIFY_SOCKET, systemd''s notification socket')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show who leads an election, its token and its queue')
            [CompletionResult]::new('pause', 'pause', [CompletionResultType]::ParameterValue, 'Pause an election across the fleet: no run of it starts until `leaderrun resume` (or until --for ends)')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'End an election''s pause: runs start again (those waiting with --wait join the line as they come back). Exits 0 whether it was paused or not, saying which')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Check, before a real run, that a run of an election would work')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'leaderrun;status' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--max-age', '--max-age', [CompletionResultType]::ParameterName, 'A freshness check for monitoring: exit 0 if a run succeeded within DURATION of now, else 2, with one line saying when the last success was. Works with nobody leading')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'With --all: only elections whose names start with PREFIX')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'How to print: text, json (as --json), or prometheus (the text exposition format, for node_exporter''s textfile collector)')
            [CompletionResult]::new('--endpoints', '--endpoints', [CompletionResultType]::ParameterName, 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails')
            [CompletionResult]::new('--discovery-srv', '--discovery-srv', [CompletionResultType]::ParameterName, 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379')
            [CompletionResult]::new('--discovery-srv-name', '--discovery-srv-name', [CompletionResultType]::ParameterName, 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`')
            [CompletionResult]::new('--insecure-discovery', '--insecure-discovery', [CompletionResultType]::ParameterName, 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both')
            [CompletionResult]::new('--dial-timeout', '--dial-timeout', [CompletionResultType]::ParameterName, 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM), for an etcd that checks client certificates')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) of --cert')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)')
            [CompletionResult]::new('--password', '--password', [CompletionResultType]::ParameterName, 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file')
            [CompletionResult]::new('--password-file', '--password-file', [CompletionResultType]::ParameterName, 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON object instead of text')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Keep watching, printing a line each time the leader changes')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Every election whose name starts with --prefix (every one in etcd without it): a line each, a JSON array with --json, or metrics with --format prometheus')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'leaderrun;pause' {
            [CompletionResult]::new('--for', '--for', [CompletionResultType]::ParameterName, 'End the pause by itself after DURATION (1s to 366 days): it is written on an etcd lease of that length, so a forgotten pause cannot outlive it. Without it, the pause lasts until `resume`')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why, shown to every run it keeps from starting and by `status` (at most 200 characters; control characters are shown escaped)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--endpoints', '--endpoints', [CompletionResultType]::ParameterName, 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails')
            [CompletionResult]::new('--discovery-srv', '--discovery-srv', [CompletionResultType]::ParameterName, 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379')
            [CompletionResult]::new('--discovery-srv-name', '--discovery-srv-name', [CompletionResultType]::ParameterName, 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`')
            [CompletionResult]::new('--insecure-discovery', '--insecure-discovery', [CompletionResultType]::ParameterName, 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both')
            [CompletionResult]::new('--dial-timeout', '--dial-timeout', [CompletionResultType]::ParameterName, 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM), for an etcd that checks client certificates')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) of --cert')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)')
            [CompletionResult]::new('--password', '--password', [CompletionResultType]::ParameterName, 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file')
            [CompletionResult]::new('--password-file', '--password-file', [CompletionResultType]::ParameterName, 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'leaderrun;resume' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--endpoints', '--endpoints', [CompletionResultType]::ParameterName, 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails')
            [CompletionResult]::new('--discovery-srv', '--discovery-srv', [CompletionResultType]::ParameterName, 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379')
            [CompletionResult]::new('--discovery-srv-name', '--discovery-srv-name', [CompletionResultType]::ParameterName, 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`')
            [CompletionResult]::new('--insecure-discovery', '--insecure-discovery', [CompletionResultType]::ParameterName, 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both')
            [CompletionResult]::new('--dial-timeout', '--dial-timeout', [CompletionResultType]::ParameterName, 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM), for an etcd that checks client certificates')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) of --cert')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)')
            [CompletionResult]::new('--password', '--password', [CompletionResultType]::ParameterName, 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file')
            [CompletionResult]::new('--password-file', '--password-file', [CompletionResultType]::ParameterName, 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'leaderrun;check' {
            [CompletionResult]::new('--once-per', '--once-per', [CompletionResultType]::ParameterName, 'The window the runs use (`--once-per`): its marker''s grant is then needed too')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it')
            [CompletionResult]::new('--endpoints', '--endpoints', [CompletionResultType]::ParameterName, 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails')
            [CompletionResult]::new('--discovery-srv', '--discovery-srv', [CompletionResultType]::ParameterName, 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379')
            [CompletionResult]::new('--discovery-srv-name', '--discovery-srv-name', [CompletionResultType]::ParameterName, 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`')
            [CompletionResult]::new('--insecure-discovery', '--insecure-discovery', [CompletionResultType]::ParameterName, 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both')
            [CompletionResult]::new('--dial-timeout', '--dial-timeout', [CompletionResultType]::ParameterName, 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM), for an etcd that checks client certificates')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) of --cert')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)')
            [CompletionResult]::new('--password', '--password', [CompletionResultType]::ParameterName, 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file')
            [CompletionResult]::new('--password-file', '--password-file', [CompletionResultType]::ParameterName, 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'leaderrun;help' {
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show who leads an election, its token and its queue')
            [CompletionResult]::new('pause', 'pause', [CompletionResultType]::ParameterValue, 'Pause an election across the fleet: no run of it starts until `leaderrun resume` (or until --for ends)')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'End an election''s pause: runs start again (those waiting with --wait join the line as they come back). Exits 0 whether it was paused or not, saying which')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Check, before a real run, that a run of an election would work')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'leaderrun;help;status' {
            break
        }
        'leaderrun;help;pause' {
            break
        }
        'leaderrun;help;resume' {
            break
        }
        'leaderrun;help;check' {
            break
        }
        'leaderrun;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
