//! The workspace layer: where agents that change files work. A task gets a disposable
//! [`scratch`] copy of the target repository (a linked git worktree by default); commands run
//! there confined by bubblewrap ([`sandbox`]); what changed comes back as [`hunks`] a person
//! approves one at a time ([`review`], [`land`]; a review job waits for them, [`flow`]), and
//! only approved hunks reach the real tree. What a person reads of a change is shown with its
//! control characters escaped ([`display`]) and its file header's meaning ([`header`]).

pub mod display;
pub mod flow;
pub mod header;
pub mod hunks;
pub mod land;
pub mod review;
pub mod ros;
pub mod sandbox;
pub mod scratch;
