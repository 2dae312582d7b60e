// The pod sandbox holder for the real nodes' containerd (scripts/images.sh builds it
// into localhost/pause:<tag>): no registry is reachable, so no upstream pause image.
module graphfleet.dev/tools/pause

go 1.22
