package mem

// Checked exposes the build's checked flag to the external tests.
const Checked = checked
