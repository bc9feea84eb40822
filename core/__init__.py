"""What the client and the runtime share, importing neither: today the file system
layer (``yarnflow.core.fs``), as Flink keeps its FileSystem in flink-core."""
