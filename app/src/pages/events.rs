//! The events fans can buy for: the catalogue, searched and filtered by the
//! query in the page's address (so a search can be shared as a link).

use frontrow_model::{AppError, EventPage, EventSearch, EventSummary, CATEGORIES};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use leptos_router::params::ParamsMap;

use super::{set_status, status_word};
use crate::format::{availability, money};

/// The same search `GET /api/v1/events` answers, from the same memory.
#[server(prefix = "/_app")]
pub async fn load_events(search: EventSearch) -> Result<EventPage, AppError> {
    Ok(crate::server::engine()?.search_events(&search).await?)
}

/// The search in the page's address. The form sends its empty fields too:
/// those filter nothing.
fn search_in(query: &ParamsMap) -> Result<EventSearch, AppError> {
    let text = |key: &str| query.get(key).filter(|v| !v.trim().is_empty());
    let day = |key: &str| {
        text(key)
            .map(|v| chrono::NaiveDate::parse_from_str(v.trim(), "%Y-%m-%d"))
            .transpose()
            .map_err(|_| AppError::invalid(format!("{key} must be a date (YYYY-MM-DD)")))
    };
    let page = text("page").map(|p| p.trim().parse::<u32>()).transpose().map_err(|_| AppError::invalid("page must be a whole number"))?;
    Ok(EventSearch {
        q: text("q"),
        city: text("city"),
        category: text("category"),
        from: day("from")?,
        to: day("to")?,
        on_sale: text("on_sale").map(|v| v != "false"),
        page,
    })
}

/// `value` as it may stand in a query string.
fn escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The address of `page` of the same search.
fn page_link(search: &EventSearch, page: u32) -> String {
    let mut pairs: Vec<(&str, String)> = Vec::new();
    for (key, value) in [("q", &search.q), ("city", &search.city), ("category", &search.category)] {
        if let Some(value) = value {
            pairs.push((key, value.clone()));
        }
    }
    for (key, value) in [("from", search.from), ("to", search.to)] {
        if let Some(day) = value {
            pairs.push((key, day.to_string()));
        }
    }
    if search.on_sale == Some(true) {
        pairs.push(("on_sale", "true".into()));
    }
    if page > 1 {
        pairs.push(("page", page.to_string()));
    }
    let query: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={}", escaped(v))).collect();
    if query.is_empty() {
        "/".to_owned()
    } else {
        format!("/?{}", query.join("&"))
    }
}

#[component]
pub fn EventsPage() -> impl IntoView {
    let search = search_in(&use_query_map().read_untracked());
    let form_values = search.clone().unwrap_or_default();
    view! {
        <Title text="Events"/>
        <section class="events">
            <h1>"Events"</h1>
            <Suspense fallback=|| view! { <p>"Loading events…"</p> }>
                {move || {
                    let search = search.clone();
                    let form_values = form_values.clone();
                    Suspend::new(async move {
                        let loaded = match search {
                            Ok(search) => load_events(search.clone()).await.map(|page| (search, page)),
                            Err(e) => Err(e),
                        };
                        if let Err(e) = &loaded {
                            set_status(if e.status() == 422 { 400 } else { e.status() });
                        }
                        let (cities, categories) = match &loaded {
                            Ok((_, page)) => (page.cities.clone(), page.categories.clone()),
                            Err(_) => (Vec::new(), CATEGORIES.map(str::to_owned).to_vec()),
                        };
                        view! {
                            <SearchForm search=form_values cities categories/>
                            {match loaded {
                                Ok((search, page)) => view! { <Results search page/> }.into_any(),
                                Err(e) => view! { <p class="error" role="alert">"Could not search: " {e.message}</p> }.into_any(),
                            }}
                        }
                    })
                }}
            </Suspense>
        </section>
    }
}

/// A plain GET form: it works without JavaScript and its result is a link.
#[component]
fn SearchForm(search: EventSearch, cities: Vec<String>, categories: Vec<String>) -> impl IntoView {
    let chosen = |list: Vec<String>, current: Option<String>| {
        list.into_iter()
            .map(|value| {
                let selected = current.as_deref().is_some_and(|c| c.eq_ignore_ascii_case(&value));
                view! { <option value=value.clone() selected=selected>{value.clone()}</option> }
            })
            .collect_view()
    };
    let day = |d: Option<chrono::NaiveDate>| d.map(|d| d.to_string()).unwrap_or_default();
    view! {
        <form class="event-search" method="get" action="/" role="search">
            <label class="wide">"Search" <input type="search" name="q" value=search.q.clone().unwrap_or_default() maxlength="200"
                placeholder="Event, performer, venue or city"/></label>
            <label>"City" <select name="city"><option value="">"Any city"</option>{chosen(cities, search.city.clone())}</select></label>
            <label>"Category" <select name="category"><option value="">"Any category"</option>{chosen(categories, search.category.clone())}</select></label>
            <label>"From" <input type="date" name="from" value=day(search.from)/></label>
            <label>"To" <input type="date" name="to" value=day(search.to)/></label>
            <label class="check"><input type="checkbox" name="on_sale" value="true" checked=search.on_sale == Some(true)/> "On sale now"</label>
            <button class="primary" type="submit">"Search"</button>
        </form>
    }
}

#[component]
fn Results(search: EventSearch, page: EventPage) -> impl IntoView {
    let filtered = search != EventSearch { page: search.page, ..Default::default() };
    let count = match page.total {
        1 => "1 event".to_owned(),
        n => format!("{n} events"),
    };
    let pages = (page.pages > 1).then(|| {
        let previous = (page.page > 1).then(|| view! { <a rel="prev" href=page_link(&search, page.page - 1)>"← Earlier"</a> });
        let next = (page.page < page.pages).then(|| view! { <a rel="next" href=page_link(&search, page.page + 1)>"Later →"</a> });
        view! {
            <nav class="pages" aria-label="Pages">
                {previous} <span>{format!("Page {} of {}", page.page, page.pages)}</span> {next}
            </nav>
        }
    });
    view! {
        <p class="result-count" id="result-count" data-total=page.total>
            {count} {filtered.then(|| view! { " · " <a href="/">"Clear the search"</a> })}
        </p>
        {if page.events.is_empty() {
            let message = if filtered { "No events match this search." } else { "No events yet." };
            view! { <p class="notice">{message}</p> }.into_any()
        } else {
            view! {
                <ul class="event-list">
                    {page.events.into_iter().map(|e| view! { <EventItem event=e/> }).collect_view()}
                </ul>
            }.into_any()
        }}
        {pages}
    }
}

#[component]
fn EventItem(event: EventSummary) -> impl IntoView {
    let (text, class) = availability(&status_word(event.status), event.seats_available, event.seats_total);
    let prices = if event.price_min_cents == event.price_max_cents {
        money(i64::from(event.price_min_cents))
    } else {
        format!("{} – {}", money(i64::from(event.price_min_cents)), money(i64::from(event.price_max_cents)))
    };
    let e = event.event;
    let href = format!("/events/{}", e.event_id);
    let place = if e.details.city.is_empty() { e.venue } else { format!("{}, {}", e.venue, e.details.city) };
    let category = e.kind.clone();
    view! {
        <li class="event-card" data-event-id=e.event_id.to_string() data-category=category>
            <p class="category">{e.kind}</p>
            <h2><a href=href>{e.name}</a></h2>
            {(!e.details.performers.is_empty()).then(|| view! { <p class="performers">{e.details.performers.join(", ")}</p> })}
            <p class="meta">{place} " · " {e.starts_at.format("%a %e %b %Y, %H:%M UTC").to_string()}</p>
            <p class="prices">{prices}</p>
            <p class=format!("availability {class}")>{text}</p>
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_goes_into_its_links_and_comes_back_out_the_same() {
        let search = EventSearch {
            q: Some("Ana & Co 100%".into()),
            city: Some("Lisbon".into()),
            from: chrono::NaiveDate::from_ymd_opt(2027, 1, 2),
            on_sale: Some(true),
            ..Default::default()
        };
        let link = page_link(&search, 2);
        assert_eq!(link, "/?q=Ana%20%26%20Co%20100%25&city=Lisbon&from=2027-01-02&on_sale=true&page=2");
        let mut query = ParamsMap::new();
        for pair in link.trim_start_matches("/?").split('&') {
            let (k, v) = pair.split_once('=').expect("a pair");
            query.insert(k.to_owned(), v.to_owned());
        }
        assert_eq!(search_in(&query).expect("a valid search"), EventSearch { page: Some(2), ..search.clone() });
        assert_eq!(page_link(&EventSearch::default(), 1), "/");
        query.replace("to", "soon".into());
        assert!(search_in(&query).is_err());
    }
}
