package report

// ShortRevision is the revision's first 12 characters, with "+dirty" when
// the working tree had changes.
func (b Build) ShortRevision() string {
	r := b.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if b.Modified {
		r += "+dirty"
	}
	return r
}

// Describe is the build as report.md's "revision" row gives it.
func (b Build) Describe() string {
	switch b.RevisionSource {
	case RevisionFromBuildInfo, RevisionFromGit:
		s := b.Revision
		if b.Modified {
			s += " +dirty (the working tree had changes)"
		}
		if b.RevisionTime != "" {
			s += ", committed " + b.RevisionTime
		}
		return s + "; from " + b.RevisionSource
	case RevisionFromModule:
		return "module " + b.Module
	case RevisionUnknown:
		return "unknown (" + RevisionUnknownWhy + ")"
	}
	return ""
}

// Where Build.Revision came from (Build.RevisionSource).
const (
	// RevisionFromBuildInfo: the binary's own VCS stamp (go build in a git
	// checkout; -buildvcs is auto by default, but go run never stamps).
	RevisionFromBuildInfo = "build info"
	// RevisionFromGit: the binary was built by go run (or go test) moments
	// before, from the checkout its sources are in; the revision was read
	// with git from that checkout when it started.
	RevisionFromGit = "git at run time (go run)"
	// RevisionFromModule: a tagged module version (go install ...@v0.3.0)
	// names the code; no revision is needed.
	RevisionFromModule = "module version"
	// RevisionUnknown: none of the above.
	RevisionUnknown = "unknown"
)

// RevisionUnknownWhy is what -version and the reports say when the revision
// is unknown.
const RevisionUnknownWhy = "no VCS stamp: built with -buildvcs=false, -trimpath or outside a git checkout; go build -buildvcs=true in the checkout stamps it"
