//! Lists read a page at a time, so that memory stays flat however many objects there are:
//! a full list of 10,000 Workspaces would hold tens of megabytes at once.

use std::fmt::Debug;

use kube::Api;
use kube::api::{ListParams, ObjectList};
use kube::core::PartialObjectMeta;
use serde::de::DeserializeOwned;

/// The pages of one list. `params` carries the page size (`limit`) and any selectors.
///
/// ```ignore
/// let mut pages = Pages::new(ListParams::default().limit(100));
/// while let Some(workspaces) = pages.next(&api).await? { /* ... */ }
/// ```
pub struct Pages {
    params: ListParams,
    done: bool,
}

impl Pages {
    pub fn new(params: ListParams) -> Self {
        Self {
            params,
            done: false,
        }
    }

    /// The next page of whole objects; `None` once the list is through.
    pub async fn next<K>(&mut self, api: &Api<K>) -> Result<Option<Vec<K>>, kube::Error>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        if self.done {
            return Ok(None);
        }
        let page = api.list(&self.params).await?;
        Ok(Some(self.advance(page)))
    }

    /// The next page of metadata only; `None` once the list is through.
    pub async fn next_metadata<K>(
        &mut self,
        api: &Api<K>,
    ) -> Result<Option<Vec<PartialObjectMeta<K>>>, kube::Error>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        if self.done {
            return Ok(None);
        }
        let page = api.list_metadata(&self.params).await?;
        Ok(Some(self.advance(page)))
    }

    /// Takes the page's continue token; an absent or empty one ends the list.
    fn advance<T: Clone>(&mut self, page: ObjectList<T>) -> Vec<T> {
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => {
                self.params = self.params.clone().continue_token(&token);
            }
            _ => self.done = true,
        }
        page.items
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{ListMeta, TypeMeta};

    use super::*;

    fn page(names: &[&str], token: Option<&str>) -> ObjectList<ConfigMap> {
        ObjectList {
            types: TypeMeta::default(),
            metadata: ListMeta {
                continue_: token.map(str::to_owned),
                ..ListMeta::default()
            },
            items: names
                .iter()
                .map(|n| {
                    let mut cm = ConfigMap::default();
                    cm.metadata.name = Some((*n).to_owned());
                    cm
                })
                .collect(),
        }
    }

    #[test]
    fn the_continue_token_carries_on_and_an_empty_one_ends_the_list() {
        let mut pages = Pages::new(ListParams::default().limit(2).labels("app=x"));
        assert_eq!(pages.advance(page(&["a", "b"], Some("t1"))).len(), 2);
        assert!(!pages.done);
        assert_eq!(pages.params.continue_token.as_deref(), Some("t1"));
        assert_eq!(pages.params.label_selector.as_deref(), Some("app=x"));
        assert_eq!(pages.params.limit, Some(2));
        assert_eq!(pages.advance(page(&["c"], Some(""))).len(), 1);
        assert!(pages.done, "an empty token is the last page");
        let mut single = Pages::new(ListParams::default());
        single.advance(page(&[], None));
        assert!(single.done, "no token is the last page");
    }
}
