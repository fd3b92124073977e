//! Why we did not run, said only when someone is watching (a terminal, or
//! -v): cron mails whatever is printed.

use super::campaign::Campaigner;
use super::Config;
use crate::clock;
use crate::election::once_per::Marker;
use crate::election::{self, Leader};
use crate::etcd::ids::LeaseId;
use crate::logging::{self, Level};
use crate::retry::CLEANUP;
use protocol::table::CampaignEvent;

/// The line for a campaign that ends with the conflict code.
pub async fn conflict(config: &Config, campaign: &Campaigner<'_>, event: &CampaignEvent) {
    if !config.explain {
        return;
    }
    if let Some(marker) = &campaign.window_taken {
        return window(config, marker);
    }
    if let Some(paused) = &campaign.paused {
        let after = match event {
            CampaignEvent::WaitTimeout => " after waiting",
            _ => "",
        };
        let line = format!("not running{after}: {}", paused.line_for(&config.election));
        return logging::say(Level::Info, &line);
    }
    if matches!(event, CampaignEvent::WaitTimeout) {
        let read = clock::timeout(
            CLEANUP,
            election::read_leader(campaign.connection(), &config.election),
        );
        let leader = read
            .await
            .and_then(Result::ok)
            .and_then(|snapshot| snapshot.leader);
        return held(config, leader.as_ref(), " after waiting");
    }
    held(config, campaign.held_by.as_ref(), "");
}

fn held(config: &Config, leader: Option<&Leader>, after: &str) {
    let holder = leader.map_or_else(|| "another replica".to_string(), Leader::describe);
    let line = format!(
        "not running{after}: {} is held by {holder}",
        config.election
    );
    logging::say(Level::Info, &line);
}

fn window(config: &Config, marker: &Marker) {
    let left = match (marker.lease, marker.left) {
        (LeaseId::NONE, _) => format!(
            "; its marker has no lease, so the window never closes (remove it with: {})",
            crate::election::holder::etcdctl_del(&crate::election::once_per::marker_key(
                &config.election
            ))
        ),
        (_, None) => String::new(),
        (_, Some(left)) => format!(
            "; the window closes in {}",
            humantime::format_duration(left)
        ),
    };
    let line = format!(
        "not running: {} {}{left}",
        config.election,
        marker.why_not()
    );
    logging::say(Level::Info, &line);
}
