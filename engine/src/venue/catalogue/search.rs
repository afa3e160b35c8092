//! Searching the catalogue: the published events held in memory, filtered
//! and paged (no query to the database).

use frontrow_model::{EventPage, EventSearch, EventStatus, EventSummary};

use crate::error::{EngineError, Result};

/// Events on one page of results.
pub const EVENTS_PER_PAGE: u32 = 12;
const MAX_PAGE: u32 = 10_000;

/// A search, checked, with its words in lower case.
struct Filter {
    words: Vec<String>,
    city: Option<String>,
    category: Option<String>,
    from: Option<chrono::NaiveDate>,
    to: Option<chrono::NaiveDate>,
    on_sale: bool,
    page: u32,
}

/// An empty field is no filter (a form sends its empty fields too). A
/// search only reads, so any text is taken (a range with `from` after `to`
/// simply finds nothing).
fn given(field: &str, value: Option<&str>, max: usize) -> Result<Option<String>> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if value.chars().count() > max {
        return Err(EngineError::invalid(format!("{field} is at most {max} characters")));
    }
    Ok(Some(value.to_lowercase()))
}

impl Filter {
    fn new(search: &EventSearch) -> Result<Self> {
        let words = given("q", search.q.as_deref(), 200)?.map(|q| q.split_whitespace().map(str::to_owned).collect()).unwrap_or_default();
        let page = search.page.unwrap_or(1);
        if !(1..=MAX_PAGE).contains(&page) {
            return Err(EngineError::invalid(format!("page must be 1 to {MAX_PAGE}")));
        }
        Ok(Self {
            words,
            city: given("city", search.city.as_deref(), 100)?,
            category: given("category", search.category.as_deref(), 50)?,
            from: search.from,
            to: search.to,
            on_sale: search.on_sale.unwrap_or(false),
            page,
        })
    }

    fn matches(&self, summary: &EventSummary) -> bool {
        let event = &summary.event;
        let day = event.starts_at.date_naive();
        if self.from.is_some_and(|from| day < from) || self.to.is_some_and(|to| day > to) {
            return false;
        }
        if self.on_sale && summary.status != EventStatus::OnSale {
            return false;
        }
        if self.city.as_ref().is_some_and(|city| event.details.city.to_lowercase() != *city) {
            return false;
        }
        if self.category.as_ref().is_some_and(|category| event.kind.to_lowercase() != *category) {
            return false;
        }
        if self.words.is_empty() {
            return true;
        }
        let mut text = format!("{} {} {} {}", event.name, event.venue, event.details.city, event.kind);
        for performer in &event.details.performers {
            text.push(' ');
            text.push_str(performer);
        }
        let text = text.to_lowercase();
        self.words.iter().all(|word| text.contains(word.as_str()))
    }
}

/// Distinct values, in order, the first spelling of each kept.
fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for value in values.filter(|v| !v.trim().is_empty()) {
        if !seen.iter().any(|s| s.to_lowercase() == value.to_lowercase()) {
            seen.push(value.to_owned());
        }
    }
    seen.sort_by_key(|s| s.to_lowercase());
    seen
}

/// The page of `catalogue` (published events, soonest first) that `search`
/// asks for; a page past the last is empty.
pub fn search(catalogue: Vec<EventSummary>, search: &EventSearch) -> Result<EventPage> {
    let filter = Filter::new(search)?;
    let cities = distinct(catalogue.iter().map(|s| s.event.details.city.as_str()));
    let categories = distinct(catalogue.iter().map(|s| s.event.kind.as_str()));
    let found: Vec<EventSummary> = catalogue.into_iter().filter(|s| filter.matches(s)).collect();
    let total = u32::try_from(found.len()).unwrap_or(u32::MAX);
    let skip = (filter.page as usize - 1) * EVENTS_PER_PAGE as usize;
    let events = found.into_iter().skip(skip).take(EVENTS_PER_PAGE as usize).collect();
    Ok(EventPage { events, total, page: filter.page, pages: total.div_ceil(EVENTS_PER_PAGE), per_page: EVENTS_PER_PAGE, cities, categories })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, NaiveDate, TimeZone, Utc};
    use frontrow_model::{Event, EventDetails, EventId};

    fn summary(name: &str, kind: &str, city: &str, performers: &[&str], day: u32, status: EventStatus) -> EventSummary {
        let starts_at = Utc.with_ymd_and_hms(2027, 3, day, 20, 0, 0).single().expect("a date");
        EventSummary {
            event: Event {
                event_id: EventId::from_uuid(uuid::Uuid::new_v4()),
                name: name.into(),
                kind: kind.into(),
                venue: format!("{city} Hall"),
                details: EventDetails { city: city.into(), performers: performers.iter().map(|p| p.to_string()).collect(), ..Default::default() },
                starts_at,
                sale_opens_at: starts_at - Duration::days(30),
                hold_ttl_seconds: 480,
                max_seats_per_order: 8,
                waiting_room_enabled: false,
                queue_requires_verified_email: false,
                published: true,
                cancelled_at: None,
                refund_policy: Default::default(),
                tiers: Vec::new(),
                ticket_types: Vec::new(),
                presales: Vec::new(),
            },
            status,
            seats_total: 10,
            seats_available: 5,
            seats_held: 0,
            price_min_cents: 1000,
            price_max_cents: 2000,
        }
    }

    fn catalogue() -> Vec<EventSummary> {
        vec![
            summary("Aurora Live", "concert", "Berlin", &["The Midnight Aurora"], 1, EventStatus::OnSale),
            summary("Hamlet", "theatre", "London", &["Royal Company"], 5, EventStatus::Scheduled),
            summary("Cup Final", "sport", "Berlin", &["Reds", "Blues"], 9, EventStatus::SoldOut),
            summary("Late Laughs", "comedy", "berlin", &[], 12, EventStatus::OnSale),
        ]
    }

    fn names(page: &EventPage) -> Vec<&str> {
        page.events.iter().map(|s| s.event.name.as_str()).collect()
    }

    #[test]
    fn every_given_filter_must_match_and_words_are_found_in_any_field() {
        let all = |q: EventSearch| search(catalogue(), &q).expect("a valid search");
        assert_eq!(names(&all(EventSearch::default())), ["Aurora Live", "Hamlet", "Cup Final", "Late Laughs"]);
        assert_eq!(names(&all(EventSearch { q: Some("midnight".into()), ..Default::default() })), ["Aurora Live"]);
        assert_eq!(names(&all(EventSearch { q: Some("BLUES final".into()), ..Default::default() })), ["Cup Final"]);
        assert_eq!(names(&all(EventSearch { q: Some("london hall".into()), ..Default::default() })), ["Hamlet"]);
        assert_eq!(names(&all(EventSearch { city: Some(" BERLIN ".into()), ..Default::default() })), ["Aurora Live", "Cup Final", "Late Laughs"]);
        assert_eq!(
            names(&all(EventSearch { city: Some("berlin".into()), on_sale: Some(true), ..Default::default() })),
            ["Aurora Live", "Late Laughs"]
        );
        assert_eq!(names(&all(EventSearch { category: Some("Sport".into()), ..Default::default() })), ["Cup Final"]);
        let from = NaiveDate::from_ymd_opt(2027, 3, 5);
        let to = NaiveDate::from_ymd_opt(2027, 3, 9);
        assert_eq!(names(&all(EventSearch { from, to, ..Default::default() })), ["Hamlet", "Cup Final"]);
        assert_eq!(names(&all(EventSearch { city: Some(String::new()), q: Some("  ".into()), ..Default::default() })).len(), 4);
        let page = all(EventSearch::default());
        assert_eq!(page.cities, ["Berlin", "London"]);
        assert_eq!(page.categories, ["comedy", "concert", "sport", "theatre"]);
    }

    #[test]
    fn results_come_in_pages_and_bad_searches_are_refused() {
        let many: Vec<EventSummary> = (1..=27).map(|d| summary(&format!("Night {d}"), "concert", "Oslo", &[], d, EventStatus::OnSale)).collect();
        let page = |n: u32| search(many.clone(), &EventSearch { page: Some(n), ..Default::default() }).expect("a valid search");
        assert_eq!((page(1).total, page(1).pages, page(1).events.len()), (27, 3, 12));
        assert_eq!(names(&page(3)), ["Night 25", "Night 26", "Night 27"]);
        assert!(page(4).events.is_empty());
        let refused = |q: EventSearch| matches!(search(many.clone(), &q), Err(EngineError::InvalidInput(_)));
        assert!(refused(EventSearch { page: Some(0), ..Default::default() }));
        assert!(refused(EventSearch { q: Some("x".repeat(201)), ..Default::default() }));
        let backwards = EventSearch { from: NaiveDate::from_ymd_opt(2027, 3, 9), to: NaiveDate::from_ymd_opt(2027, 3, 5), ..Default::default() };
        assert_eq!(search(many.clone(), &backwards).map(|p| p.total).ok(), Some(0));
    }
}
