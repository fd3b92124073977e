//! Prints the path of the etcd that this folder's etcd-bin-vendored ships
//! (3.5 or 3.6, by the Cargo.toml that builds it), for scripts/test to run
//! the core of the suite against (`LEADERRUN_TEST_ETCD`). A crate of its
//! own for each: one dependency graph cannot hold two 3.x releases of one
//! crate beside the suite's 3.7.

fn main() {
    match etcd_bin_vendored::etcd_bin_path() {
        Ok(path) => println!("{}", path.display()),
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(1);
        }
    }
}
