package yarnflow.testcluster;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system, except that it sets a file's permission bits with a
 * system call (through java.nio) instead of by running {@code chmod}.
 *
 * <p>The test clusters run Hadoop from its Maven Central jars, which have no
 * {@code libhadoop.so}. Without it {@link RawLocalFileSystem#setPermission} forks a
 * {@code chmod} for each file, and a NodeManager localizing an archive sets the
 * permission of every file in it: a shipped Python environment of 9,000 files cost
 * each host about 95 CPU-s and a minute and a half. A production NodeManager has the
 * native library, whose {@code NativeIO.POSIX.chmod} is the same system call this
 * makes. Modes with bits beyond rwx (the sticky bit) still go to {@code chmod}.
 *
 * <p>Only the NodeManagers use it: their own copy of the host's core-site.xml names
 * these classes as {@code fs.file.impl} and {@code fs.AbstractFileSystem.file.impl}
 * (docker/host.py). The host's configuration, which containers and clients read, does
 * not: a Spark JVM has none of the cluster's jars.
 */
public class NioChmodLocalFileSystem extends LocalFileSystem {
  public NioChmodLocalFileSystem() {
    super(new Raw());
  }

  /** The raw local file system with the chmod made by java.nio. */
  public static class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      short mode = permission.toShort();
      if ((mode & ~0777) != 0) {
        super.setPermission(p, permission);
        return;
      }
      Files.setPosixFilePermissions(pathToFile(p).toPath(), bits(mode));
    }

    static Set<PosixFilePermission> bits(short mode) {
      PosixFilePermission[] order = {
          PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
          PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
          PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
          PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
          PosixFilePermission.OWNER_READ};
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      for (int bit = 0; bit < order.length; bit++) {
        if ((mode & (1 << bit)) != 0) {
          set.add(order[bit]);
        }
      }
      return set;
    }
  }

  /** FileContext's form of it (in place of Hadoop's LocalFs), checksummed as that is. */
  public static class Fs extends ChecksumFs {
    public Fs(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(new RawFs(uri, conf));
    }
  }

  /** FileContext's raw form (in place of Hadoop's RawLocalFs), answering as that does. */
  public static class RawFs extends DelegateToFileSystem {
    public RawFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(uri, new Raw(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1;
    }

    @Override
    public FsServerDefaults getServerDefaults(Path f) throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    @Deprecated
    public FsServerDefaults getServerDefaults() throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public boolean isValidName(String src) {
      return true;
    }
  }
}
