
use builtin;
use str;

set edit:completion:arg-completer[leaderrun] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'leaderrun'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'leaderrun'= {
            cand --endpoints 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails'
            cand --discovery-srv 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379'
            cand --discovery-srv-name 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`'
            cand --insecure-discovery 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both'
            cand --dial-timeout 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)'
            cand --config 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it'
            cand --cacert 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https'
            cand --cert 'Client certificate (PEM), for an etcd that checks client certificates'
            cand --key 'Private key (PEM) of --cert'
            cand --user 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)'
            cand --password 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file'
            cand --password-file 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY'
            cand -n 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --name 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --ttl 'Lease time to live. etcd may grant a longer one (it raises TTLs below its minimum); the granted TTL is the one used. Renewed every third of it. Shorter means faster takeover after a crash, and less tolerance for a slow etcd'
            cand --wait-timeout 'Queue, as --wait, but give up after this long, with the conflict exit code. The queue is always looked at once: `--wait-timeout 0` runs if nobody leads, as `flock -w 0` does'
            cand --once-per 'Start at most one run per DURATION, across all replicas: for cron jobs on machines whose clocks disagree. The first leader in a window runs; later leaders exit with the conflict code (-v says when, where and with which token the window''s run started). The window is an etcd lease, so etcd measures it and it ends by itself. Make it shorter than the schedule''s period and longer than the clocks'' skew, e.g. `--once-per 1h` for a nightly job. Replicas that disagree on the window are refused (125), also once a shorter window''s marker has expired, while the last run''s start record names its window'
            cand --once-per-attempts 'With --once-per: only a run that succeeds spends the window, and up to N (1 to 100) runs may start in it, each after the last failed (a non-zero exit, leadership lost, --timeout, a signal). With --wait the replicas queued behind a failed run try in turn; without it, the next firing on any replica tries. 1, the default, is the first run to start spending the window, whatever its end. The run that opens a window sets its N; the window''s marker lists each attempt and how it ended (`status`). One runner at a time: not with --max-running'
            cand --max-running 'Run up to N at once: a semaphore. The N replicas first in line run, each with a fencing token of its own; the rest queue (--wait) or exit with the conflict code. Every replica of one name must give the same N: the leader''s N holds, and a replica that gives another is refused (125) before it joins the line'
            cand --conflict-exit-code 'Exit code when another replica leads or the wait timed out: 0 to 255, but not 123 to 127, which leaderrun gives for other things'
            cand --kill-signal 'Signal that stops the command''s whole job (its process group and every descendant that left it), then SIGCONT so that a stopped job acts on it'
            cand --kill-after 'Send SIGKILL this long after --kill-signal if the group is still there. On loss of leadership it is shortened so that SIGKILL lands before the lease could expire on the server (the warning says so)'
            cand --timeout 'Stop the command if it runs longer than this (--kill-signal, then SIGKILL after --kill-after, in full while the lease is kept alive), and exit 123. Counts from the command''s start: --wait-timeout bounds the queueing'
            cand --log-format 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers'
            cand --manual 'Print a man page (roff) and exit: leaderrun(1), or with `status`, leaderrun-status(1)'
            cand --completions 'Print the completion script for SHELL and exit'
            cand --insecure-skip-tls-verify 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only'
            cand -w 'Queue for leadership instead of exiting when another replica leads'
            cand --wait 'Queue for leadership instead of exiting when another replica leads'
            cand --redact-args 'Store only the program''s name in etcd, not its arguments. The command line is kept in the candidate key''s value (and in the --once-per marker), where `status` shows it to anyone who can read the election: use this when an argument is secret'
            cand --pass-notify-socket 'Give the command NOTIFY_SOCKET, systemd''s notification socket'
            cand -v 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand --verbose 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand status 'Show who leads an election, its token and its queue'
            cand pause 'Pause an election across the fleet: no run of it starts until `leaderrun resume` (or until --for ends)'
            cand resume 'End an election''s pause: runs start again (those waiting with --wait join the line as they come back). Exits 0 whether it was paused or not, saying which'
            cand check 'Check, before a real run, that a run of an election would work'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'leaderrun;status'= {
            cand -n 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --name 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --max-age 'A freshness check for monitoring: exit 0 if a run succeeded within DURATION of now, else 2, with one line saying when the last success was. Works with nobody leading'
            cand --prefix 'With --all: only elections whose names start with PREFIX'
            cand --format 'How to print: text, json (as --json), or prometheus (the text exposition format, for node_exporter''s textfile collector)'
            cand --endpoints 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails'
            cand --discovery-srv 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379'
            cand --discovery-srv-name 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`'
            cand --insecure-discovery 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both'
            cand --dial-timeout 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)'
            cand --config 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it'
            cand --cacert 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https'
            cand --cert 'Client certificate (PEM), for an etcd that checks client certificates'
            cand --key 'Private key (PEM) of --cert'
            cand --user 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)'
            cand --password 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file'
            cand --password-file 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY'
            cand --log-format 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers'
            cand --json 'Print one JSON object instead of text'
            cand --watch 'Keep watching, printing a line each time the leader changes'
            cand --all 'Every election whose name starts with --prefix (every one in etcd without it): a line each, a JSON array with --json, or metrics with --format prometheus'
            cand --insecure-skip-tls-verify 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only'
            cand -v 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand --verbose 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'leaderrun;pause'= {
            cand --for 'End the pause by itself after DURATION (1s to 366 days): it is written on an etcd lease of that length, so a forgotten pause cannot outlive it. Without it, the pause lasts until `resume`'
            cand --reason 'Why, shown to every run it keeps from starting and by `status` (at most 200 characters; control characters are shown escaped)'
            cand -n 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --name 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --endpoints 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails'
            cand --discovery-srv 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379'
            cand --discovery-srv-name 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`'
            cand --insecure-discovery 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both'
            cand --dial-timeout 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)'
            cand --config 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it'
            cand --cacert 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https'
            cand --cert 'Client certificate (PEM), for an etcd that checks client certificates'
            cand --key 'Private key (PEM) of --cert'
            cand --user 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)'
            cand --password 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file'
            cand --password-file 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY'
            cand --log-format 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers'
            cand --insecure-skip-tls-verify 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only'
            cand -v 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand --verbose 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'leaderrun;resume'= {
            cand -n 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --name 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --endpoints 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails'
            cand --discovery-srv 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379'
            cand --discovery-srv-name 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`'
            cand --insecure-discovery 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both'
            cand --dial-timeout 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)'
            cand --config 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it'
            cand --cacert 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https'
            cand --cert 'Client certificate (PEM), for an etcd that checks client certificates'
            cand --key 'Private key (PEM) of --cert'
            cand --user 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)'
            cand --password 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file'
            cand --password-file 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY'
            cand --log-format 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers'
            cand --insecure-skip-tls-verify 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only'
            cand -v 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand --verbose 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'leaderrun;check'= {
            cand --once-per 'The window the runs use (`--once-per`): its marker''s grant is then needed too'
            cand -n 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --name 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it'
            cand --endpoints 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails'
            cand --discovery-srv 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379'
            cand --discovery-srv-name 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`'
            cand --insecure-discovery 'With --discovery-srv: `false` drops the http endpoints found, and checks each server''s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both'
            cand --dial-timeout 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection''s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file''s) give as long as etcdctl would wait: their sum, each missing one at etcdctl''s default (2s and 5s)'
            cand --config 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it'
            cand --cacert 'Trust the CAs in FILE (PEM) for etcd''s server certificate, instead of the system''s. Any TLS option makes bare `host:port` endpoints https'
            cand --cert 'Client certificate (PEM), for an etcd that checks client certificates'
            cand --key 'Private key (PEM) of --cert'
            cand --user 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)'
            cand --password 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file'
            cand --password-file 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit''s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY'
            cand --log-format 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers'
            cand --insecure-skip-tls-verify 'Accept any server certificate: the connection is encrypted, but the server''s identity is not checked. For testing only'
            cand -v 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand --verbose 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'leaderrun;help'= {
            cand status 'Show who leads an election, its token and its queue'
            cand pause 'Pause an election across the fleet: no run of it starts until `leaderrun resume` (or until --for ends)'
            cand resume 'End an election''s pause: runs start again (those waiting with --wait join the line as they come back). Exits 0 whether it was paused or not, saying which'
            cand check 'Check, before a real run, that a run of an election would work'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'leaderrun;help;status'= {
        }
        &'leaderrun;help;pause'= {
        }
        &'leaderrun;help;resume'= {
        }
        &'leaderrun;help;check'= {
        }
        &'leaderrun;help;help'= {
        }
    ]
    $completions[$command]
}
