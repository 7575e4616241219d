use super::*;

#[test]
fn a_selector_covers_clusters_whose_match_labels_name_its_keys() {
    let selector = CacheSelector::parse(CLUSTER_NAME_LABEL);
    assert_eq!(selector.selector(), CLUSTER_NAME_LABEL);
    let default = BTreeMap::from([(CLUSTER_NAME_LABEL.to_owned(), "sample".to_owned())]);
    assert!(selector.covers(&default));
    let custom = BTreeMap::from([("app".to_owned(), "db".to_owned())]);
    assert!(!selector.covers(&custom));
    assert!(
        CacheSelector::parse("").covers(&custom),
        "empty: everything"
    );
}

#[test]
fn progress_counts_only_what_the_store_applied() {
    let progress = ObjectKindProgress::default();
    let mut tracker = Tracker::default();
    let pod = |rv: &str| Pod {
        metadata: kube::api::ObjectMeta {
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    tracker.observe(&progress, &watcher::Event::<Pod>::Init);
    tracker.observe(&progress, &watcher::Event::InitApply(pod("7")));
    assert_eq!(
        *progress.sender.borrow(),
        Applied::default(),
        "not before InitDone"
    );
    tracker.observe(&progress, &watcher::Event::<Pod>::InitDone);
    assert_eq!(
        *progress.sender.borrow(),
        Applied {
            ready: true,
            resource_version: 7,
            ended: false,
        }
    );
    tracker.observe(&progress, &watcher::Event::Delete(pod("12")));
    assert_eq!(progress.sender.borrow().resource_version, 12);
}

#[test]
fn a_dropped_watch_stream_ends_its_progress() {
    // The controller's graceful stop ends its watches before the running passes: a pass
    // waiting for its writes to show must fall back to a LIST at once.
    let (sender, receiver) = watch::channel(Applied::default());
    let events = futures::stream::pending::<Result<watcher::Event<Pod>, watcher::Error>>();
    let stream = tracked(events, Some(sender), None);
    assert!(!receiver.borrow().ended);
    drop(stream);
    assert!(receiver.borrow().ended);
}
