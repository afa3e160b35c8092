//! Venue layouts: the saved ones (with their JSON to export), and the
//! generator that builds one with a live preview.

use frontrow_model::{AppError, Layout};
use leptos::prelude::*;

use crate::admin::islands::LayoutBuilder;
use crate::admin::{refused, when, Frame};

#[server(prefix = "/_app")]
pub async fn load_layouts() -> Result<Vec<Layout>, AppError> {
    let (engine, _) = crate::server::staff().await?;
    Ok(engine.layouts().await?)
}

#[component]
pub fn LayoutsPage() -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match load_layouts().await {
                    Err(e) => refused(e, "/admin/layouts"),
                    Ok(layouts) => view! {
                        <Frame title="Venue layouts".to_owned() here="/admin/layouts".to_owned()>
                            <p><a class="button-link" href="/admin/layouts/new">"New layout"</a></p>
                            <table class="data">
                                <caption>{format!("{} layouts", layouts.len())}</caption>
                                <thead><tr><th scope="col">"Layout"</th><th scope="col">"Seats"</th><th scope="col">"Tiers"</th>
                                    <th scope="col">"Saved"</th><th scope="col">"Export"</th></tr></thead>
                                <tbody>
                                    {layouts.into_iter().map(|l| view! {
                                        <tr>
                                            <th scope="row">{l.name}</th>
                                            <td class="num">{l.seats_total}</td>
                                            <td>{l.tiers.join(", ")}</td>
                                            <td>{when(l.created_at)}</td>
                                            <td><a href=format!("/api/v1/admin/layouts/{}", l.layout_id) download="layout.json">"JSON"</a></td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </Frame>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
pub fn NewLayoutPage() -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                // Only staff may build layouts: the check is the loader's.
                match load_layouts().await {
                    Err(e) => refused(e, "/admin/layouts/new"),
                    Ok(_) => view! {
                        <Frame title="New layout".to_owned() here="/admin/layouts/new".to_owned()><LayoutBuilder/></Frame>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}
