use leptos::prelude::*;

use crate::client::map_view::MapView;

/// Zoom, pan and (on a map of several sections) a section filter.
#[island]
pub fn MapTools(sections: Vec<String>) -> impl IntoView {
    let view = MapView::default();
    Effect::new(move |_| view.start());
    let several = !sections.is_empty();
    view! {
        <div class="map-tools" role="toolbar" aria-label="Seat map view">
            <button type="button" aria-label="Zoom in" on:click=move |_| view.zoom(0.7)>"+"</button>
            <button type="button" aria-label="Zoom out" on:click=move |_| view.zoom(1.0 / 0.7)>"−"</button>
            <button type="button" on:click=move |_| view.show_section("")>{if several { "Whole venue" } else { "Fit" }}</button>
            {several.then(|| view! {
                <label>"Section "
                    <select id="section-filter" on:change=move |ev| view.show_section(&event_target_value(&ev))>
                        <option value="">"All"</option>
                        {sections.into_iter().map(|s| view! { <option value=s.clone()>{format!("Section {s}")}</option> }).collect_view()}
                    </select>
                </label>
            })}
        </div>
    }
}
