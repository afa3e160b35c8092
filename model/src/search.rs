//! Searching the catalogue: what a fan asks for and the page of events
//! answered.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::event::EventSummary;

/// What a fan searches the catalogue for (`GET /events` and the home page
/// take the same parameters). Every field is optional; given ones must all
/// match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
pub struct EventSearch {
    /// Words that must all appear in the name, a performer, the venue, the
    /// city or the category (any case).
    #[cfg_attr(feature = "openapi", param(max_length = 200))]
    pub q: Option<String>,
    /// The city (any case).
    #[cfg_attr(feature = "openapi", param(max_length = 100))]
    pub city: Option<String>,
    /// The category (any case).
    #[cfg_attr(feature = "openapi", param(max_length = 50))]
    pub category: Option<String>,
    /// Events starting on or after this day (UTC).
    pub from: Option<NaiveDate>,
    /// Events starting on or before this day (UTC).
    pub to: Option<NaiveDate>,
    /// Only events a fan can buy for now.
    pub on_sale: Option<bool>,
    /// The page of results, from 1.
    #[cfg_attr(feature = "openapi", param(minimum = 1, maximum = 10_000))]
    pub page: Option<u32>,
}

/// One page of the catalogue's answer to a search, soonest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventPage {
    pub events: Vec<EventSummary>,
    /// The events matching, on every page.
    pub total: u32,
    pub page: u32,
    pub pages: u32,
    pub per_page: u32,
    /// The cities and categories of every published event, to filter by.
    pub cities: Vec<String>,
    pub categories: Vec<String>,
}
