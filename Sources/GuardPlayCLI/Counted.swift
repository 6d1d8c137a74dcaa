/// `count` and `noun`, the noun in the plural unless there is exactly one: "1 stream", "2 segments".
func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
