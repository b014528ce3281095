// A warm interpreter's workspace: a size-bounded tmpfs of its own for its programs' folders, so
// that a program's files (completion.py, data.json, the records, model.lp) are made and removed
// in memory instead of on the disk under $TMPDIR (inode allocation and journal commits on ext4
// were a sixth of a warm program's CPU, and blocked while others wrote to the disk).
//
// The evaluator makes the tmpfs with the mount API (fsopen, fsconfig, fsmount) and keeps the
// mount only as a descriptor: it is on no host path, and it is freed once the last descriptor
// and the last process that has it mounted are gone. It writes the interpreter's module copy
// into it; the warm interpreter's bootstrap (warm_pool.cc) moves into a mount namespace of its
// own (every mount private, so nothing propagates to or from the host), attaches the mount
// there at an empty folder and runs the interpreter's script from it; its children, forked into
// that namespace, find the module copy and their folders under that path, and the evaluator
// writes and reads them through its descriptor. Programs of one interpreter run one at a time, each in a
// fresh 0700 folder of user nobody that the evaluator empties and removes after the reap, and
// Landlock gives each program only its own folder: the bound (bytes and inodes) holds a program
// that fills it to that much, and no program's files outlive it.
//
// Only root may make a tmpfs and a mount namespace here: where either step is refused (trex not
// root, a kernel without the mount API, TREX_WORKSPACE=0), the interpreter's programs keep
// today's folders under $TMPDIR, with every sandbox layer as before.
#pragma once

#include <stddef.h>

#include <string>

namespace trex::oreval {

// The bound of one interpreter's workspace: a program may fill this much; a file it writes is
// capped at its RLIMIT_FSIZE and the evaluator reads back at most ExecOptions::read_bytes.
constexpr size_t kWorkspaceBytes = size_t(512) << 20;
constexpr size_t kWorkspaceInodes = 4096;

// A detached tmpfs mount of at most `bytes` and `inodes`, its root owned by root with mode 0711
// (nobody can enter a folder in it but list nothing), mounted nosuid, nodev and noexec: its
// descriptor (O_CLOEXEC), or -1 with errno set (EPERM without CAP_SYS_ADMIN, ENOSYS on a kernel
// before 5.2).
int make_workspace(size_t bytes, size_t inodes);

// In the process that attaches it (the warm interpreter, one thread, before its first fork): a
// mount namespace of its own, every mount in it made private, and the mount `mount_fd` attached
// at the folder `path`. 0, or the errno of the step that failed with *what naming it; after a
// failure the process may be in its own namespace with nothing attached (its children then fail
// to enter a workspace folder, and the evaluator, told, gives them none).
int attach_workspace(int mount_fd, const char* path, const char** what);

// Removes the entry `name` of the folder `parent_fd` and, when it is a folder, everything under
// it, without following a link and holding one descriptor at a time whatever the depth (a
// program may leave a tree as deep as its inodes allow). Best effort: what cannot be removed
// stays. Only for a tree that nothing changes meanwhile (the program that made it is reaped).
void remove_tree_at(int parent_fd, const std::string& name);

}  // namespace trex::oreval
