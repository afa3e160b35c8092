//! The box office: the staff half of the app, in the same Leptos app as the
//! fan pages. Every page is for staff only (fans get 403, visitors are sent
//! to sign in); every action is a server function over the same engine
//! commands as the admin JSON API, written to the event's change log.

pub mod actions;
mod islands;
pub mod layout_spec;
mod pages;

pub use pages::*;

use frontrow_model::{AppError, ErrorKind};
use leptos::prelude::*;
use leptos::server_fn::error::ServerFnUrlError;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::pages::{redirect, set_status, NotFound};

/// The box office's frame: its navigation, and the answer to a visitor who
/// may not be here.
#[component]
fn Frame(title: String, here: String, children: Children) -> impl IntoView {
    let links = [
        ("/admin", "Events"),
        ("/admin/layouts", "Layouts"),
        ("/admin/bookings", "Bookings"),
        ("/admin/checkin", "Check-in"),
        ("/admin/payments", "Payments"),
        ("/admin/staff", "Staff"),
    ];
    view! {
        <Title text=title.clone()/>
        <div class="admin">
            <nav class="admin-nav" aria-label="Box office">
                <ul>
                    {links.into_iter().map(|(href, text)| {
                        let current = here == href || (href != "/admin" && here.starts_with(href));
                        view! { <li><a href=href aria-current=current.then_some("page")>{text}</a></li> }
                    }).collect_view()}
                </ul>
            </nav>
            <section class="admin-main">
                <h1>{title}</h1>
                <FormNotice/>
                {children()}
            </section>
        </div>
    }
}

/// What a plain form post came back with: its error (`?__err=`), or that it
/// was saved (`?saved=1`).
#[component]
fn FormNotice() -> impl IntoView {
    let query = use_query_map().read_untracked().clone();
    let error = query.get("__err").map(|e| ServerFnUrlError::<AppError>::decode_err(&e).message);
    let saved = query.get("saved").is_some() || query.get("sent").is_some() || query.get("settled").is_some();
    view! {
        {error.map(|e| view! { <p class="msg error" role="alert">{e}</p> })}
        {(saved).then(|| view! { <p class="msg success" role="status">"Done."</p> })}
    }
}

/// The answer to a staff page's loader failing: sign in first, not yours
/// (403), not there (404), or an error.
fn refused(error: AppError, here: &str) -> AnyView {
    // Our paths are plain ASCII: anything else in one (control or
    // direction-changing characters) names nothing here, and is no place to
    // send anyone back to.
    if !here.bytes().all(|b| b.is_ascii_graphic()) {
        return view! { <NotFound/> }.into_any();
    }
    match error.kind {
        ErrorKind::Unauthenticated => {
            let to = format!("/signin?next={here}");
            redirect(&to);
            view! { <p><a href=to>"Sign in"</a> " to use the box office."</p> }.into_any()
        }
        ErrorKind::Forbidden => {
            set_status(403);
            view! {
                <Title text="Not allowed"/>
                <section class="notice-page">
                    <h1>"Not allowed"</h1>
                    <p>"This page is for box-office staff. " <a href="/">"Back to events"</a> "."</p>
                </section>
            }
            .into_any()
        }
        ErrorKind::NotFound => view! { <NotFound/> }.into_any(),
        _ => {
            set_status(error.status());
            view! { <p class="msg error" role="alert">{error.message}</p> }.into_any()
        }
    }
}

/// A `datetime-local` value for a UTC time.
fn local_input(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M").to_string()
}

fn when(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%e %b %Y, %H:%M UTC").to_string()
}

/// A unit enum's word, spaced for reading.
fn word<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(|s| s.replace('_', " "))).unwrap_or_default()
}
