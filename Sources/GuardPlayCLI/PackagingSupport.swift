import Gateway

/// The packager as packaging jobs see it. This build has none yet (the packager's issue is open), so
/// `POST /v1/packaging-jobs` answers 503 `packaging-unavailable`.
enum PackagingSupport {
    static let engine: (any PackagingEngine)? = nil
}
