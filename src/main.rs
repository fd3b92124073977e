fn main() {
    std::process::exit(leaderrun::main(std::env::args_os().collect()));
}
