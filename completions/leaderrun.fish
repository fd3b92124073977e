# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_leaderrun_global_optspecs
    string join \n endpoints= discovery-srv= discovery-srv-name= insecure-discovery= dial-timeout= config= cacert= cert= key= insecure-skip-tls-verify user= password= password-file= n/name= ttl= w/wait wait-timeout= once-per= once-per-attempts= redact-args max-running= conflict-exit-code= kill-signal= kill-after= timeout= pass-notify-socket v/verbose log-format= manual= completions= h/help V/version
end

function __fish_leaderrun_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_leaderrun_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_leaderrun_using_subcommand
    set -l cmd (__fish_leaderrun_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c leaderrun -n "__fish_leaderrun_needs_command" -l endpoints -d 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails' -r -f
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l discovery-srv -d 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l discovery-srv-name -d 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l insecure-discovery -d 'With --discovery-srv: `false` drops the http endpoints found, and checks each server\'s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both' -r -f -a "true\t''
false\t''"
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l dial-timeout -d 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection\'s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file\'s) give as long as etcdctl would wait: their sum, each missing one at etcdctl\'s default (2s and 5s)' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l config -d 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it' -r -F
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l cacert -d 'Trust the CAs in FILE (PEM) for etcd\'s server certificate, instead of the system\'s. Any TLS option makes bare `host:port` endpoints https' -r -F
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l cert -d 'Client certificate (PEM), for an etcd that checks client certificates' -r -F
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l key -d 'Private key (PEM) of --cert' -r -F
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l user -d 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l password -d 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l password-file -d 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit\'s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY' -r -F
complete -c leaderrun -n "__fish_leaderrun_needs_command" -s n -l name -d 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l ttl -d 'Lease time to live. etcd may grant a longer one (it raises TTLs below its minimum); the granted TTL is the one used. Renewed every third of it. Shorter means faster takeover after a crash, and less tolerance for a slow etcd' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l wait-timeout -d 'Queue, as --wait, but give up after this long, with the conflict exit code. The queue is always looked at once: `--wait-timeout 0` runs if nobody leads, as `flock -w 0` does' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l once-per -d 'Start at most one run per DURATION, across all replicas: for cron jobs on machines whose clocks disagree. The first leader in a window runs; later leaders exit with the conflict code (-v says when, where and with which token the window\'s run started). The window is an etcd lease, so etcd measures it and it ends by itself. Make it shorter than the schedule\'s period and longer than the clocks\' skew, e.g. `--once-per 1h` for a nightly job. Replicas that disagree on the window are refused (125), also once a shorter window\'s marker has expired, while the last run\'s start record names its window' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l once-per-attempts -d 'With --once-per: only a run that succeeds spends the window, and up to N (1 to 100) runs may start in it, each after the last failed (a non-zero exit, leadership lost, --timeout, a signal). With --wait the replicas queued behind a failed run try in turn; without it, the next firing on any replica tries. 1, the default, is the first run to start spending the window, whatever its end. The run that opens a window sets its N; the window\'s marker lists each attempt and how it ended (`status`). One runner at a time: not with --max-running' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l max-running -d 'Run up to N at once: a semaphore. The N replicas first in line run, each with a fencing token of its own; the rest queue (--wait) or exit with the conflict code. Every replica of one name must give the same N: the leader\'s N holds, and a replica that gives another is refused (125) before it joins the line' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l conflict-exit-code -d 'Exit code when another replica leads or the wait timed out: 0 to 255, but not 123 to 127, which leaderrun gives for other things' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l kill-signal -d 'Signal that stops the command\'s whole job (its process group and every descendant that left it), then SIGCONT so that a stopped job acts on it' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l kill-after -d 'Send SIGKILL this long after --kill-signal if the group is still there. On loss of leadership it is shortened so that SIGKILL lands before the lease could expire on the server (the warning says so)' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l timeout -d 'Stop the command if it runs longer than this (--kill-signal, then SIGKILL after --kill-after, in full while the lease is kept alive), and exit 123. Counts from the command\'s start: --wait-timeout bounds the queueing' -r
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l log-format -d 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers' -r -f -a "text\t''
json\t''"
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l manual -d 'Print a man page (roff) and exit: leaderrun(1), or with `status`, leaderrun-status(1)' -r -f -a "leaderrun\t''
status\t''
check\t''
exit-codes\t'README\'s exit status table (Markdown)'
environment\t'README\'s table of what the command gets (Markdown)'"
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l completions -d 'Print the completion script for SHELL and exit' -r -f -a "bash\t''
elvish\t''
fish\t''
powershell\t''
zsh\t''"
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l insecure-skip-tls-verify -d 'Accept any server certificate: the connection is encrypted, but the server\'s identity is not checked. For testing only'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -s w -l wait -d 'Queue for leadership instead of exiting when another replica leads'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l redact-args -d 'Store only the program\'s name in etcd, not its arguments. The command line is kept in the candidate key\'s value (and in the --once-per marker), where `status` shows it to anyone who can read the election: use this when an argument is secret'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -l pass-notify-socket -d 'Give the command NOTIFY_SOCKET, systemd\'s notification socket'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -s v -l verbose -d 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -s V -l version -d 'Print version'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -a "status" -d 'Show who leads an election, its token and its queue'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -a "pause" -d 'Pause an election across the fleet: no run of it starts until `leaderrun resume` (or until --for ends)'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -a "resume" -d 'End an election\'s pause: runs start again (those waiting with --wait join the line as they come back). Exits 0 whether it was paused or not, saying which'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -a "check" -d 'Check, before a real run, that a run of an election would work'
complete -c leaderrun -n "__fish_leaderrun_needs_command" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -s n -l name -d 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l max-age -d 'A freshness check for monitoring: exit 0 if a run succeeded within DURATION of now, else 2, with one line saying when the last success was. Works with nobody leading' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l prefix -d 'With --all: only elections whose names start with PREFIX' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l format -d 'How to print: text, json (as --json), or prometheus (the text exposition format, for node_exporter\'s textfile collector)' -r -f -a "text\t''
json\t''
prometheus\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l endpoints -d 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails' -r -f
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l discovery-srv -d 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l discovery-srv-name -d 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l insecure-discovery -d 'With --discovery-srv: `false` drops the http endpoints found, and checks each server\'s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both' -r -f -a "true\t''
false\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l dial-timeout -d 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection\'s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file\'s) give as long as etcdctl would wait: their sum, each missing one at etcdctl\'s default (2s and 5s)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l config -d 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l cacert -d 'Trust the CAs in FILE (PEM) for etcd\'s server certificate, instead of the system\'s. Any TLS option makes bare `host:port` endpoints https' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l cert -d 'Client certificate (PEM), for an etcd that checks client certificates' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l key -d 'Private key (PEM) of --cert' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l user -d 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l password -d 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l password-file -d 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit\'s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l log-format -d 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers' -r -f -a "text\t''
json\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l json -d 'Print one JSON object instead of text'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l watch -d 'Keep watching, printing a line each time the leader changes'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l all -d 'Every election whose name starts with --prefix (every one in etcd without it): a line each, a JSON array with --json, or metrics with --format prometheus'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -l insecure-skip-tls-verify -d 'Accept any server certificate: the connection is encrypted, but the server\'s identity is not checked. For testing only'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -s v -l verbose -d 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l for -d 'End the pause by itself after DURATION (1s to 366 days): it is written on an etcd lease of that length, so a forgotten pause cannot outlive it. Without it, the pause lasts until `resume`' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l reason -d 'Why, shown to every run it keeps from starting and by `status` (at most 200 characters; control characters are shown escaped)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -s n -l name -d 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l endpoints -d 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails' -r -f
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l discovery-srv -d 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l discovery-srv-name -d 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l insecure-discovery -d 'With --discovery-srv: `false` drops the http endpoints found, and checks each server\'s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both' -r -f -a "true\t''
false\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l dial-timeout -d 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection\'s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file\'s) give as long as etcdctl would wait: their sum, each missing one at etcdctl\'s default (2s and 5s)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l config -d 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l cacert -d 'Trust the CAs in FILE (PEM) for etcd\'s server certificate, instead of the system\'s. Any TLS option makes bare `host:port` endpoints https' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l cert -d 'Client certificate (PEM), for an etcd that checks client certificates' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l key -d 'Private key (PEM) of --cert' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l user -d 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l password -d 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l password-file -d 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit\'s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l log-format -d 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers' -r -f -a "text\t''
json\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -l insecure-skip-tls-verify -d 'Accept any server certificate: the connection is encrypted, but the server\'s identity is not checked. For testing only'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -s v -l verbose -d 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand pause" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -s n -l name -d 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l endpoints -d 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails' -r -f
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l discovery-srv -d 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l discovery-srv-name -d 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l insecure-discovery -d 'With --discovery-srv: `false` drops the http endpoints found, and checks each server\'s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both' -r -f -a "true\t''
false\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l dial-timeout -d 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection\'s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file\'s) give as long as etcdctl would wait: their sum, each missing one at etcdctl\'s default (2s and 5s)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l config -d 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l cacert -d 'Trust the CAs in FILE (PEM) for etcd\'s server certificate, instead of the system\'s. Any TLS option makes bare `host:port` endpoints https' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l cert -d 'Client certificate (PEM), for an etcd that checks client certificates' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l key -d 'Private key (PEM) of --cert' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l user -d 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l password -d 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l password-file -d 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit\'s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l log-format -d 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers' -r -f -a "text\t''
json\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -l insecure-skip-tls-verify -d 'Accept any server certificate: the connection is encrypted, but the server\'s identity is not checked. For testing only'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -s v -l verbose -d 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand resume" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l once-per -d 'The window the runs use (`--once-per`): its marker\'s grant is then needed too' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -s n -l name -d 'Election name, exactly as `etcdctl elect NAME` uses it. Default: derived from COMMAND (`leaderrun/<program>-<hash of all arguments>`), so the same command line on every replica joins the same election; -v prints it' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l endpoints -d 'etcd endpoints, comma-separated (`http://host:port`, `https://host:port`, or bare `host:port`: https if a TLS option is given, or ETCDCTL_INSECURE_TRANSPORT=false). Falls back to ETCDCTL_ENDPOINTS, the settings file, then 127.0.0.1:2379. leaderrun moves to the next endpoint when one fails' -r -f
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l discovery-srv -d 'Find the endpoints in DNS, as etcdctl does: the SRV records `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN` (http), looked up again when every endpoint fails. Used instead of --endpoints (unless --endpoints is given as an option and this only in the environment); finding nothing is an error (125), never a fall back to 127.0.0.1:2379' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l discovery-srv-name -d 'With --discovery-srv: the records of this service name, `_etcd-client-ssl-NAME._tcp.DOMAIN` and `_etcd-client-NAME._tcp.DOMAIN`' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l insecure-discovery -d 'With --discovery-srv: `false` drops the http endpoints found, and checks each server\'s certificate against DOMAIN rather than its own host, as etcdctl does; `true` (the default) takes both' -r -f -a "true\t''
false\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l dial-timeout -d 'How long to wait for etcd to answer before giving up (exit 125). An etcd that takes the connection and then says nothing may be given up on sooner: the connection\'s ping, every third of the TTL, closes it after two thirds of the TTL. Without it, ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT (or the settings file\'s) give as long as etcdctl would wait: their sum, each missing one at etcdctl\'s default (2s and 5s)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l config -d 'Read settings from FILE: `NAME=value` lines of the variables leaderrun reads (ETCDCTL_ENDPOINTS, ETCDCTL_USER, LEADERRUN_TTL, ...). An option or a variable of the environment comes first, the file next, then the default. Without it, /etc/leaderrun/leaderrun.conf if it exists. Refused if others than its owner may read or write it' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l cacert -d 'Trust the CAs in FILE (PEM) for etcd\'s server certificate, instead of the system\'s. Any TLS option makes bare `host:port` endpoints https' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l cert -d 'Client certificate (PEM), for an etcd that checks client certificates' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l key -d 'Private key (PEM) of --cert' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l user -d 'etcd user for an etcd with authentication on. The password may follow a colon; otherwise give --password or ETCDCTL_PASSWORD (leaderrun does not prompt)' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l password -d 'Password for --user. Other users can read command lines (`ps`) and crontabs: prefer --password-file' -r
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l password-file -d 'Read the password for --user from FILE (its first line), which only its owner may read. Without a password given otherwise, a systemd unit\'s credential `etcd-password` (LoadCredential=) is read from $CREDENTIALS_DIRECTORY' -r -F
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l log-format -d 'text, or json: every line leaderrun writes to stderr (its errors, a loss, why it did not run, the -v logs) as one JSON object, for log shippers' -r -f -a "text\t''
json\t''"
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -l insecure-skip-tls-verify -d 'Accept any server certificate: the connection is encrypted, but the server\'s identity is not checked. For testing only'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -s v -l verbose -d 'Say more on stderr: -v for decisions (election name, holder, token), -vv for every step. LEADERRUN_LOG takes filter directives instead (e.g. `leaderrun=trace,h2=debug`)'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand help; and not __fish_seen_subcommand_from status pause resume check help" -f -a "status" -d 'Show who leads an election, its token and its queue'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand help; and not __fish_seen_subcommand_from status pause resume check help" -f -a "pause" -d 'Pause an election across the fleet: no run of it starts until `leaderrun resume` (or until --for ends)'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand help; and not __fish_seen_subcommand_from status pause resume check help" -f -a "resume" -d 'End an election\'s pause: runs start again (those waiting with --wait join the line as they come back). Exits 0 whether it was paused or not, saying which'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand help; and not __fish_seen_subcommand_from status pause resume check help" -f -a "check" -d 'Check, before a real run, that a run of an election would work'
complete -c leaderrun -n "__fish_leaderrun_using_subcommand help; and not __fish_seen_subcommand_from status pause resume check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
