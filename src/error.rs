//! How an error is recognised once it has travelled up as an
//! [`anyhow::Error`]: by its type, wherever it sits in the chain of
//! contexts, with [`find`], the one idiom for it. It names no error type
//! of its own, so every folder may use it.
//!
//! The types themselves are defined where they arise (etcd's refusals in
//! `etcd::connection`, a disagreement among replicas in `election`, a
//! command that cannot be run in `child`); which of them no retry changes
//! is the campaign's to say (`run::campaign`), and their exit codes are
//! chosen in `exit::exit_of`, at the top.

/// The error of type `E` in `err`'s chain, if there is one: `err` itself,
/// or any context or cause below it.
pub fn find<E>(err: &anyhow::Error) -> Option<&E>
where
    E: std::error::Error + Send + Sync + 'static,
{
    err.chain().find_map(|cause| cause.downcast_ref::<E>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::connection::Refused;
    use anyhow::Context;

    #[test]
    fn an_error_is_found_under_its_contexts() {
        let err = Err::<(), _>(anyhow::Error::new(Refused::new("permission denied")))
            .context("granting a lease")
            .context("campaigning")
            .unwrap_err();
        assert_eq!(
            find::<Refused>(&err).map(ToString::to_string).as_deref(),
            Some("permission denied")
        );
        let other = anyhow::anyhow!("etcd is unreachable").context("campaigning");
        assert!(find::<Refused>(&other).is_none());
    }
}
