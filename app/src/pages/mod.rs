//! Pages. These components run only on the server (islands mode); their data
//! comes from server functions, called directly during the render. The
//! interactive parts are the islands in [`crate::islands`].

mod bookings;
mod choose;
mod event;
mod events;

pub use bookings::{AccountPage, BookingPage, CheckoutPage};
pub use choose::{ChooseRowPage, ChooseSectionPage, ChooseSectionsPage};
#[cfg(feature = "ssr")]
pub use event::fan_sharing_the_page;
pub use event::{EventPage, SectionPage};
pub use events::EventsPage;

use frontrow_model::{AppError, Role, User};
use leptos::prelude::*;
use leptos::server_fn::error::ServerFnUrlError;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::islands::AuthForm;
use crate::links::safe_next;

#[server(prefix = "/_app")]
pub async fn load_viewer() -> Result<Option<User>, AppError> {
    crate::server::viewer().await
}

pub(crate) fn set_status(_code: u16) {
    #[cfg(feature = "ssr")]
    crate::server::set_status(_code);
}

pub(crate) fn redirect(to: &str) {
    // A path from the URL may hold decoded control characters, which are no
    // header value (leptos_axum would panic on them): no redirect then.
    if to.chars().any(char::is_control) {
        return;
    }
    #[cfg(feature = "ssr")]
    leptos_axum::redirect(to);
}

fn param(name: &'static str) -> String {
    use_params_map().read_untracked().get(name).unwrap_or_default()
}

/// The error a plain form post was sent back with (`?__err=`), if any.
fn form_error() -> Option<String> {
    use_query_map().read_untracked().get("__err").map(|e| ServerFnUrlError::<AppError>::decode_err(&e).message)
}

fn long_date(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%A %e %B %Y, %H:%M UTC").to_string()
}

fn short_date(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%e %B %Y, %H:%M UTC").to_string()
}

fn status_word<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

#[component]
pub fn SiteHeader() -> impl IntoView {
    view! {
        <header class="site-header">
            <a class="brand" href="/">"frontrow"</a>
            <nav aria-label="Account">
                <Suspense fallback=|| ()>
                    {move || Suspend::new(async move { viewer_links(load_viewer().await.ok().flatten().as_ref()) })}
                </Suspense>
            </nav>
        </header>
    }
}

/// The header's links for the viewer: their own, or the way in.
fn viewer_links(viewer: Option<&User>) -> AnyView {
    match viewer {
        Some(v) => view! {
            {(v.role != Role::Fan).then(|| view! { <a href="/admin">"Box office"</a> })}
            <a href="/account">"My bookings"</a>
            <span class="who">{v.name.clone()}</span>
        }
        .into_any(),
        None => view! {
            <a href="/signin">"Sign in"</a>
            <a href="/signup" class="button-link">"Sign up"</a>
        }
        .into_any(),
    }
}

/// The header's links for `viewer` as markup, as a page shows them: a page
/// kept for every signed-in fan gets each fan's own put in.
#[cfg(feature = "ssr")]
pub fn viewer_links_html(viewer: Option<&User>) -> String {
    viewer_links(viewer).to_html()
}

#[component]
pub fn NotFound() -> impl IntoView {
    set_status(404);
    view! {
        <Title text="Not found"/>
        <section class="notice-page">
            <h1>"Not found"</h1>
            <p>"There is nothing here. " <a href="/">"See what is on sale"</a> "."</p>
        </section>
    }
}

#[component]
pub fn SignInPage() -> impl IntoView {
    let next = safe_next(use_query_map().read_untracked().get("next"));
    view! {
        <Title text="Sign in"/>
        <section class="auth">
            <h1>"Sign in"</h1>
            <AuthForm signup=false next=next.clone() error=form_error()/>
            <p>"New here? " <a href=format!("/signup?next={next}")>"Create an account"</a></p>
        </section>
    }
}

#[component]
pub fn SignUpPage() -> impl IntoView {
    let next = safe_next(use_query_map().read_untracked().get("next"));
    view! {
        <Title text="Sign up"/>
        <section class="auth">
            <h1>"Create an account"</h1>
            <AuthForm signup=true next=next.clone() error=form_error()/>
            <p>"Already have one? " <a href=format!("/signin?next={next}")>"Sign in"</a></p>
        </section>
    }
}
