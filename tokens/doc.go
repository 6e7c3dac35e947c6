// Package tokens holds fencegw's domain: resources, epochs, the store that
// keeps each resource's high-water mark (HWM), and the Fence that decides
// whether a write carrying an epoch may reach its resource.
//
// The guarantee every piece here serves: once an epoch E has been admitted
// for a resource R, no write to R with an epoch below E is admitted, by this
// process or by any other process sharing the same store.
//
// Store backends live in subpackages (boltstore, pgstore, etcdstore); each
// passes the contract suite in package storetest.
package tokens
