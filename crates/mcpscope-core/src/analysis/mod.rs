//! Judgements over recorded sessions: protocol lint, session diff, the doctor.

pub mod answer_diff;
pub mod context_cost;
pub mod doctor;
pub mod lint;
pub mod session_diff;
pub mod surface;
