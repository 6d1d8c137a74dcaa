extension String {
    /// The path without trailing slashes (`/` stays `/`).
    private var droppingTrailingSlashes: Substring {
        var path = self[...]
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        return path
    }

    /// The last name in the path, as `NSString.lastPathComponent` gives it: `a/b/` → `b`, `/` → `/`.
    public var lastPathComponent: String {
        let path = droppingTrailingSlashes
        if path == "/" { return "/" }
        guard let slash = path.lastIndex(of: "/") else { return String(path) }
        return String(path[path.index(after: slash)...])
    }

    /// The path without its last name, as `NSString.deletingLastPathComponent` gives it: `/a/b` → `/a`,
    /// `/a` → `/`, `a` → ``.
    public var deletingLastPathComponent: String {
        let path = droppingTrailingSlashes
        guard let slash = path.lastIndex(of: "/") else { return "" }
        var parent = path[..<slash]
        while parent.hasSuffix("/") { parent = parent.dropLast() }
        return parent.isEmpty ? "/" : String(parent)
    }

    /// `component` under this path, one slash between (`NSString.appendingPathComponent`).
    public func appendingPathComponent(_ component: String) -> String {
        if isEmpty { return component }
        return hasSuffix("/") ? self + component : self + "/" + component
    }

    /// The last name's extension without its dot, or `` (`NSString.pathExtension`): `a.tar.gz` → `gz`,
    /// `.profile` → ``.
    public var pathExtension: String {
        let name = lastPathComponent
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }

    /// The path without its last name's extension (`NSString.deletingPathExtension`).
    /// A last name ending in a dot loses the dot: `file.` → `file`.
    public var deletingPathExtension: String {
        let path = droppingTrailingSlashes
        let name = String(path).lastPathComponent
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return String(path) }
        return String(path.dropLast(name.distance(from: dot, to: name.endIndex)))
    }
}
