//! Launchers: start one worker per GPU and collect what they report. `local` runs on this host
//! (also one node of a multi-node run, the way each Kubernetes pod uses it).

pub mod local;
