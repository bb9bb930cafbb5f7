//! Conversions between the state machine and the `lifecycle_msgs` wire types.

use hiroz_msgs::lifecycle_msgs as wire;

use super::machine::{Edge, State, Transition};
use crate::interfaces::lifecycle as jazzy;

pub(super) fn state(s: State) -> wire::State {
    wire::State {
        id: s.id(),
        label: s.label().to_string(),
    }
}

pub(super) fn transition(t: Transition) -> wire::Transition {
    wire::Transition {
        id: t.id(),
        label: t.label().to_string(),
    }
}

pub(super) fn description(e: Edge) -> wire::TransitionDescription {
    wire::TransitionDescription {
        transition: transition(e.transition),
        start_state: state(e.start),
        goal_state: state(e.goal),
    }
}

/// The `transition_event` message for one step, stamped now.
pub(super) fn event(e: Edge) -> jazzy::TransitionEvent {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    jazzy::TransitionEvent {
        timestamp: now,
        transition: jazzy::Transition {
            id: e.transition.id(),
            label: e.transition.label().to_string(),
        },
        start_state: jazzy::State {
            id: e.start.id(),
            label: e.start.label().to_string(),
        },
        goal_state: jazzy::State {
            id: e.goal.id(),
            label: e.goal.label().to_string(),
        },
    }
}
