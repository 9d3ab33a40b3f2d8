"""How long a test may wait for a process. Tests wait on events (a process exits, a file
appears); this cap only ends a wait that would otherwise hang, so it sits far above what the
event takes on a machine whose cores are all busy (a child that imports dpbandits and compiles
a kernel cold takes well under a minute there)."""

#: seconds after which a waited-for process is taken to hang
HANG_CAP = 600.0
