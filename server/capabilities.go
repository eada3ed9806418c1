package server

// Capabilities lists what the model described by m can do, as /api/show
// reports it (completion, tools, thinking, insert; or embedding): `woolly
// show` prints the same list.
func Capabilities(m ModelMeta) []string { return capabilities(m) }
