#!/usr/bin/python3
"""A case-insensitive view of a folder, mounted with FUSE: the tests' stand-in for APFS.

Usage (as root): casefold-fuse.py BACKING MOUNTPOINT [-f]

Every name in a path is looked up ignoring case: the first entry of the backing folder whose name
matches it wins; a name that matches nothing is created as spelled. Stat reports the backing file's
inode (the `use_ino` option), so "Images" and "images" are one folder to anyone who compares device
and inode, as they are on a case-insensitive file system. The kernel caches nothing (timeouts of 0),
so no spelling can see a stale view of what another spelling changed.

Without -f, the mount is in place once this command exits (libfuse mounts, then runs in the
background); `umount MOUNTPOINT` ends it. flock is done by the kernel for FUSE (no flock operation
here), per kernel inode: two spellings are two kernel inodes, so their flocks do not exclude each other.

Needs Debian's python3-fusepy (the module `fusepy`, on libfuse2); run with /usr/bin/python3.
"""
import errno
import os
import sys

try:
    from fusepy import FUSE, FuseOSError, Operations
except ImportError:  # fusepy as installed by pip
    from fuse import FUSE, FuseOSError, Operations

STAT_FIELDS = ("st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size",
               "st_atime_ns", "st_mtime_ns", "st_ctime_ns", "st_blocks", "st_blksize")


class CaseInsensitive(Operations):
    use_ns = True  # utimens gets nanoseconds

    def __init__(self, backing):
        self.backing = os.path.realpath(backing)

    # Resolving a path: each component as the backing folder spells it.

    def real(self, path):
        current = self.backing
        for name in (part for part in path.split("/") if part):
            current = os.path.join(current, self.spelling(current, name))
        return current

    @staticmethod
    def spelling(folder, name):
        if os.path.lexists(os.path.join(folder, name)):
            return name
        wanted = name.casefold()
        try:
            entries = os.listdir(folder)
        except OSError:
            return name  # not a folder (or gone): the caller's system call says so
        return next((entry for entry in entries if entry.casefold() == wanted), name)

    # Attributes

    def getattr(self, path, fh=None):
        info = os.fstat(fh) if fh is not None else os.lstat(self.real(path))
        attributes = {field: getattr(info, field) for field in STAT_FIELDS}
        for field in ("st_atime", "st_mtime", "st_ctime"):
            attributes[field] = attributes.pop(field + "_ns")
        return attributes

    def access(self, path, mode):
        if not os.access(self.real(path), mode):
            raise FuseOSError(errno.EACCES)

    def chmod(self, path, mode):
        os.chmod(self.real(path), mode)

    def chown(self, path, uid, gid):
        os.lchown(self.real(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self.real(path), ns=times, follow_symlinks=False)

    def statfs(self, path):
        info = os.statvfs(self.real(path))
        return {field: getattr(info, field) for field in
                ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree",
                 "f_favail", "f_flag", "f_namemax")}

    # Names

    def mkdir(self, path, mode):
        os.mkdir(self.real(path), mode)

    def rmdir(self, path):
        os.rmdir(self.real(path))

    def unlink(self, path):
        os.unlink(self.real(path))

    def rename(self, old, new):
        source, target = self.real(old), self.real(new)
        if source == target:  # the same entry under another spelling: take the new spelling
            target = os.path.join(os.path.dirname(source), os.path.basename(new))
        os.rename(source, target)

    def symlink(self, target, source):
        os.symlink(source, self.real(target))

    def readlink(self, path):
        return os.readlink(self.real(path))

    def link(self, target, source):
        os.link(self.real(source), self.real(target))

    # Folders: a descriptor of the backing folder, so fsync of the folder reaches it.

    def opendir(self, path):
        return os.open(self.real(path), os.O_RDONLY | os.O_DIRECTORY)

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self.real(path))

    def fsyncdir(self, path, datasync, fh):
        os.fsync(fh)

    def releasedir(self, path, fh):
        os.close(fh)

    # Files: the handle is a descriptor of the backing file.

    def open(self, path, flags):
        return os.open(self.real(path), flags & ~(os.O_CREAT | os.O_EXCL | os.O_NOCTTY))

    def create(self, path, mode, fi=None):
        # Called only when the kernel's lookup found no entry in any spelling.
        return os.open(self.real(path), os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self.real(path), length)

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        (os.fdatasync if datasync else os.fsync)(fh)

    def release(self, path, fh):
        os.close(fh)


def main():
    arguments = [argument for argument in sys.argv[1:] if argument != "-f"]
    if len(arguments) != 2:
        sys.exit(__doc__)
    backing, mountpoint = arguments
    # The background process libfuse leaves behind keeps every descriptor it inherits. One of them
    # tells the launcher (Foundation's Process, say) when this command has ended: held open, the
    # launcher would wait for the file system instead.
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    FUSE(CaseInsensitive(backing), mountpoint, foreground="-f" in sys.argv[1:], use_ino=True,
         attr_timeout=0, entry_timeout=0, negative_timeout=0, fsname="casefold")


if __name__ == "__main__":
    main()
