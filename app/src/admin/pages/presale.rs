//! An event's presale codes on its staff page: the batches with their uses,
//! their CSV, withdrawing one, and the form that makes a batch.

use frontrow_model::{AccessCodeBatch, CodeLimitUnit, Event};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::admin::actions::{CreateAccessCodes, RevokeAccessCodes};
use crate::admin::{local_input, when};

#[component]
pub fn PresaleCodes(event: Event, batches: Vec<AccessCodeBatch>) -> impl IntoView {
    let id = event.event_id;
    let unit = |b: &AccessCodeBatch| match b.limit_unit {
        CodeLimitUnit::Tickets => "tickets",
        CodeLimitUnit::Orders => "orders",
    };
    let rows = batches
        .into_iter()
        .map(|b| {
            let opens = [b.tiers.as_ref().map(|t| t.join(", ")), b.sections.as_ref().map(|s| format!("sections {}", s.join(", ")))]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("; ");
            let codes = if b.shared { format!("shared ({})", b.hint.clone().unwrap_or_default()) } else { format!("{} unique", b.codes) };
            let csv = format!("/api/v1/admin/events/{id}/access-codes/{}/codes.csv", b.batch_id);
            view! {
                <tr data-batch=b.batch_id.to_string()>
                    <td>{b.label.clone()}</td>
                    <td>{codes}</td>
                    <td>{if opens.is_empty() { "every seat".to_owned() } else { opens }}</td>
                    <td>{format!("{} {} per code", b.max_uses, unit(&b))}</td>
                    <td>{when(b.starts_at)} " to " {when(b.ends_at)}</td>
                    <td class="uses">{format!("{} ({} codes used)", b.uses, b.codes_used)}</td>
                    <td>
                        <a href=csv download="">"CSV"</a>
                        {match b.revoked_at {
                            Some(at) => view! { " · withdrawn " {when(at)} }.into_any(),
                            None => view! {
                                <form class="inline" method="post" action=RevokeAccessCodes::PATH>
                                    <input type="hidden" name="event_id" value=id.to_string()/>
                                    <input type="hidden" name="batch_id" value=b.batch_id.to_string()/>
                                    <button type="submit">"Withdraw"</button>
                                </form>
                            }.into_any(),
                        }}
                    </td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let default_end = local_input(event.sale_opens_at);
    view! {
        <h2 id="presale">"Presale codes"</h2>
        <p class="hint">"Codes open seats before the public sale ("{when(event.sale_opens_at)}"). A use counts while its hold lives or once it is paid for; a hold that lapses gives its use back."</p>
        {(!rows.is_empty()).then(|| view! {
            <table class="presale-batches">
                <thead><tr><th>"For"</th><th>"Codes"</th><th>"Opens"</th><th>"Limit"</th><th>"Window"</th><th>"Uses now"</th><th></th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        })}
        <form class="stacked" method="post" action=CreateAccessCodes::PATH id="new-codes">
            <input type="hidden" name="event_id" value=id.to_string()/>
            <label>"For (fans read this)" <input name="label" required maxlength="80" placeholder="Fan club"/></label>
            <label>"Shared code (empty: make unique codes)" <input name="code" maxlength="40" pattern="[A-Za-z0-9\\-]{4,40}"/></label>
            <label>"Unique codes to make" <input type="number" name="count" min="1" max="10000"/></label>
            <label>"Uses per code" <input type="number" name="max_uses" value="2" min="1" max="100000" required/></label>
            <label>"Counted in" <select name="limit_unit"><option value="tickets">"tickets"</option><option value="orders">"orders"</option></select></label>
            <label>"Tiers it opens (commas; empty: all)" <input name="tiers"/></label>
            <label>"Sections it opens (commas; empty: all)" <input name="sections"/></label>
            <label>"Starts (UTC; empty: now)" <input type="datetime-local" name="starts_at"/></label>
            <label>"Ends (UTC)" <input type="datetime-local" name="ends_at" value=default_end required/></label>
            <button class="primary" type="submit">"Make codes"</button>
        </form>
    }
}
