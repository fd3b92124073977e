//! The integration suite, one test binary: a module per area, and the
//! harness they share (common). Tests start real etcds and the real
//! leaderrun binary; tests/docs.rs, which needs neither, is its own binary.

// A scenario reads top to bottom: the 60-line rule is src/'s.
#![allow(clippy::too_many_lines)]

mod common;

mod check;
mod cluster;
mod discovery;
mod etcd_facts;
mod faults;
mod frozen;
mod handoff;
mod harness;
mod install;
mod job;
mod lifecycle;
mod log_format;
mod loss;
mod max_running;
mod messages;
mod nested_names;
mod once_per;
mod other_tools;
mod passthrough;
mod pause;
mod permissions;
mod queue;
mod readme;
mod records;
mod refusing;
mod release;
mod security;
mod settings;
mod signals;
mod status;
mod status_all;
mod stopped;
mod systemd;
mod terminal;
mod timeout;
mod token;
mod torture;
mod upgrade;
mod usage;
mod wait_shown;
mod writers;
mod zombies;
