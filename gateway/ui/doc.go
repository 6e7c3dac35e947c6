// Package ui serves the leader-timeline page of the control API and its
// embedded assets.
package ui
