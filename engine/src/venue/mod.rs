//! The venue: events, their rules and the catalogue's search ([`catalogue`]), the saved layouts
//! events are seated from ([`layouts`]), an event's seating plan in memory
//! ([`seating`]), and each instance's live seat maps ([`live`]).

pub mod catalogue;
pub mod layouts;
pub mod live;
pub mod seating;
